package cloudapi

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/wapace/wapace/errcodes"
)

// SendState is where a message stands. Every error from Send and SendBurst
// maps to exactly one state with [StateOf].
type SendState string

// The states of a message.
const (
	// StateNotSubmitted: nothing reached Meta (invalid input, the context
	// ended before a byte of the request was written, the connection could
	// not be made). It is safe to send the message again.
	StateNotSubmitted SendState = "not_submitted"
	// StateRefused: a limit refused the message, either before it was sent
	// (a [*BackpressureError]: the wait would pass its deadline) or at Meta
	// (131056, 130429, ... on every attempt). It was not sent; it is safe to
	// send it again after the limit's wait.
	StateRefused SendState = "refused"
	// StateQueued: the message is stored in a queue and not attempted yet.
	// cloudapi itself never reports it; queues built on cloudapi (the
	// outbox) do.
	StateQueued SendState = "queued"
	// StateAccepted: Meta accepted the request (accepted is not delivered:
	// delivery is reported by status webhooks).
	StateAccepted SendState = "accepted"
	// StateSubmittedUnknown: the request may have reached Meta, but no
	// answer proves whether it was accepted. Do not resend: reconcile with
	// the idempotency key in status webhooks.
	StateSubmittedUnknown SendState = "submitted_unknown"
	// StateFailed: Meta refused the message for a reason waiting will not
	// fix (a request error, 131049, ...), or the Client did, sending
	// nothing (its idempotency key names another message:
	// ErrIdempotencyConflict). Do not resend it as it is.
	StateFailed SendState = "failed"
)

// ErrSubmittedUnknown is matched by the error of a send whose outcome is
// unknown: a *SendError in StateSubmittedUnknown. Such a message is never
// resent automatically.
var ErrSubmittedUnknown = errors.New("cloudapi: submitted, outcome unknown")

// ErrDuplicate is matched by the error of a send whose idempotency key the
// Client has already sent (accepted, failed for good, with an unknown
// outcome, or still in flight): no request is made. The error is a
// *SendError with Duplicate set, describing the first send; for an accepted
// first send, Send also returns the first send's *Result. Keys of messages
// that were not sent (not submitted, refused) are forgotten at once, so
// they may be sent again; Client.Forget forgets a key on purpose.
var ErrDuplicate = errors.New("cloudapi: idempotency key already sent")

// ErrInProgress is matched by the error of a send refused because a send
// with the same idempotency key is still in progress in this Client (or
// the key is repeated within one burst): nothing of this call was written,
// and no request was made. The error is a duplicate (it also matches
// ErrDuplicate, and its State is StateSubmittedUnknown: the first send's
// outcome is not known yet); sending again once the first send has ended
// answers with that send's outcome. A queue holding the message may treat
// it as not sent and try again later.
var ErrInProgress = errors.New("cloudapi: a send with this idempotency key is in progress")

// ErrIdempotencyMemoryFull is matched by the error of a send refused
// because the Client's memory of idempotency keys (WithIdempotencyMemory)
// is full of keys whose sends are still in flight: forgetting one would
// let a retry of it be sent twice, so the new send claims nothing, makes
// no request and fails at once, a *SendError in StateNotSubmitted. It is
// safe to send the message again once sends in flight have ended; give the
// Client a larger memory than the sends it keeps in flight at once.
var ErrIdempotencyMemoryFull = errors.New("cloudapi: idempotency memory full of sends in flight")

// ErrZeroClient is returned by the methods of a Client not made by New
// (the zero Client, or a nil one): it has no token, limits or memory of
// keys, so it sends nothing.
var ErrZeroClient = errors.New("cloudapi: Client not made by New")

// ErrIdempotencyConflict is matched by the error of a send whose
// idempotency key the Client remembers for another message (another sender
// or recipient, other content): a key names one message, so no request is
// made. The refusal is permanent: the error is a *SendError in StateFailed
// wrapping an [*IdempotencyConflictError], which no retry policy retries
// (sending the same message again with that key cannot succeed while the
// Client remembers the key). The same message again is a duplicate
// (ErrDuplicate), answered with the first send's outcome.
var ErrIdempotencyConflict = errors.New("cloudapi: idempotency key already used for another message")

// IdempotencyConflictError is the cause of a send refused because its
// idempotency key names another message (see [ErrIdempotencyConflict],
// which it matches):
//
//	var ce *cloudapi.IdempotencyConflictError
//	if errors.As(err, &ce) { useAnotherKey(ce.IdempotencyKey) }
type IdempotencyConflictError struct {
	// IdempotencyKey is the key the Client remembers for another message.
	IdempotencyKey string
}

// Error names the key.
func (e *IdempotencyConflictError) Error() string {
	return "cloudapi: idempotency key " + strconv.Quote(e.IdempotencyKey) + " already used for another message"
}

// Is reports whether target is ErrIdempotencyConflict.
func (e *IdempotencyConflictError) Is(target error) bool { return target == ErrIdempotencyConflict }

// BackpressureError reports that a message could not be sent before its
// freshness deadline (or the context's deadline) because a limit would make
// it wait too long. Every reservation was given back and nothing was sent:
// the message is in StateRefused.
//
//	var bp *cloudapi.BackpressureError
//	if errors.As(err, &bp) { retryIn(bp.Wait) }
//
// Its RetryAfter method makes backoff.Retry wait Wait before trying again.
type BackpressureError struct {
	// Limit is the limit that was full: errcodes.HoldPair (the pair rate
	// limit), HoldPhoneNumber (the number's throughput, or its maintenance
	// hold), HoldApp or HoldWABA (the call budget) or HoldTier (the
	// messaging tier).
	Limit errcodes.Hold
	// Code is the Meta error code the limit stands for (131056 for the pair,
	// 130429 for the number, 131057 while it is in maintenance, 4 or 80007
	// for the budget). Zero for the tier, which has no documented code.
	Code errcodes.Code
	// Wait is how long until the limit would admit the message.
	Wait time.Duration
	// ExpiresAt is the deadline that could not be met.
	ExpiresAt time.Time
	// IdempotencyKey is the message's key (the first bubble's in a burst).
	IdempotencyKey string
}

// Error describes the limit and the wait.
func (e *BackpressureError) Error() string {
	s := "cloudapi: backpressure: " + e.Limit.String() + " limit would delay the message by " + e.Wait.String() + ", past its deadline"
	if e.Code != 0 {
		s += " (stands for " + strconv.Itoa(int(e.Code)) + ")"
	}
	return s
}

// RetryAfter returns Wait, so that backoff.Retry waits that long.
func (e *BackpressureError) RetryAfter() time.Duration { return e.Wait }

// Unwrap returns the code the limit stands for, so that
// errors.Is(err, errcodes.PairRateLimit) holds for a pair backpressure. It
// returns nil for the tier.
func (e *BackpressureError) Unwrap() error {
	if e.Code == 0 {
		return nil
	}
	return e.Code
}

// SendError reports a message that was not accepted: refused by Meta on
// every attempt, failed for good, not submitted (the context ended, the
// connection could not be made), or with an unknown outcome. It wraps the
// cause: an *errcodes.Error for Meta's answers (matchable with errors.Is
// against the errcodes constants), or the transport's or context's error.
type SendError struct {
	// State is StateNotSubmitted, StateRefused, StateFailed or
	// StateSubmittedUnknown (or, for a duplicate, the first send's state).
	State SendState
	// IdempotencyKey is the message's key (also sent as
	// biz_opaque_callback_data when the request went out).
	IdempotencyKey string
	// Attempts is the number of requests made for the message.
	Attempts int
	// Duplicate reports whether this send made no request because the
	// key was already sent; State, Attempts and Err describe that first
	// send. Such an error matches ErrDuplicate.
	Duplicate bool
	// Err is the cause; nil only for a duplicate of an accepted message.
	Err error
}

// Error describes the state and the cause.
func (e *SendError) Error() string {
	var b strings.Builder
	b.WriteString("cloudapi: ")
	if e.Duplicate {
		b.WriteString("duplicate of a message already ")
		b.WriteString(string(e.State))
	} else {
		b.WriteString("message ")
		b.WriteString(string(e.State))
		b.WriteString(" after ")
		b.WriteString(strconv.Itoa(e.Attempts))
		b.WriteString(" attempt")
		if e.Attempts != 1 {
			b.WriteString("s")
		}
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(e.Err.Error(), "cloudapi: "))
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *SendError) Unwrap() error { return e.Err }

// Is reports whether target is ErrSubmittedUnknown and the outcome is
// unknown, or ErrDuplicate and the send was a duplicate.
func (e *SendError) Is(target error) bool {
	switch target {
	case ErrSubmittedUnknown:
		return e.State == StateSubmittedUnknown
	case ErrDuplicate:
		return e.Duplicate
	}
	return false
}

// StateOf returns the state an error from Send or SendBurst leaves the
// message in: StateAccepted for nil, the State of a *SendError (for a
// duplicate: the first send's), StateRefused for a *BackpressureError, and
// StateNotSubmitted otherwise (invalid input, a burst cap, a context that
// ended before anything was reserved).
func StateOf(err error) SendState {
	if err == nil {
		return StateAccepted
	}
	var se *SendError
	if errors.As(err, &se) {
		return se.State
	}
	var bp *BackpressureError
	if errors.As(err, &bp) {
		return StateRefused
	}
	return StateNotSubmitted
}
