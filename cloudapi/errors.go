package cloudapi

import (
	"errors"
	"strconv"
	"time"

	"github.com/wapace/wapace/errcodes"
)

// SendState is where a message stands.
type SendState string

// The states of a message.
const (
	// StateNotSubmitted: nothing reached Meta, or Meta refused every
	// attempt: the message was not sent. It is safe to send it again.
	StateNotSubmitted SendState = "not_submitted"
	// StateQueued: admitted, waiting on the clock for its slot.
	StateQueued SendState = "queued"
	// StateAccepted: Meta accepted the request (accepted is not delivered:
	// delivery is reported by status webhooks).
	StateAccepted SendState = "accepted"
	// StateSubmittedUnknown: the request may have reached Meta, but no
	// answer proves whether it was accepted. Do not resend: reconcile with
	// the idempotency key in status webhooks.
	StateSubmittedUnknown SendState = "submitted_unknown"
	// StateFailed: Meta answered with an error that waiting will not fix
	// within the message's freshness (a request error, 131049, ...).
	StateFailed SendState = "failed"
)

// ErrSubmittedUnknown is matched by the error of a send whose outcome is
// unknown (a transport failure after the request may have been written, a
// timeout, a 5xx, or codes 1, 2, 131000, 131016). Such a message is never
// resent automatically.
var ErrSubmittedUnknown = errors.New("cloudapi: submitted, outcome unknown")

// ErrBackpressure is matched by every *BackpressureError.
var ErrBackpressure = errors.New("cloudapi: backpressure")

// Limit names the admission check that was full.
type Limit string

// The admission checks of a send.
const (
	LimitPair   Limit = "pair"         // pairlimit: the recipient's pair is in debt or held
	LimitNumber Limit = "phone_number" // throughput: the business number's rate or hold
	LimitBudget Limit = "api_budget"   // the app/WABA call budget is held
	LimitTier   Limit = "tier"         // the portfolio's messaging tier is full
)

// BackpressureError reports that a message could not be sent before its
// freshness deadline (or the context's deadline) because a limit was full.
// Every reservation was given back and nothing was sent.
//
//	var bp *cloudapi.BackpressureError
//	if errors.As(err, &bp) { retryLater(bp.RetryAfter) }
type BackpressureError struct {
	// Limit is the admission check that was full.
	Limit Limit
	// Scope is what the limit applies to, in errcodes' terms.
	Scope errcodes.Scope
	// Code is the Meta error code the limit stands for (131056 for the pair,
	// 130429 for the number, 131057 while it is in maintenance, 4 or 80007
	// for the budget). Zero for the tier, which has no documented code.
	Code errcodes.Code
	// RetryAfter is how long until the limit would admit the message.
	RetryAfter time.Duration
	// ExpiresAt is the deadline that could not be met.
	ExpiresAt time.Time
	// SendState is StateNotSubmitted: nothing was sent.
	SendState SendState
	// IdempotencyKey is the message's key.
	IdempotencyKey string
}

// Error describes the limit and the wait.
func (e *BackpressureError) Error() string {
	s := "cloudapi: backpressure: " + string(e.Limit) + " limit would delay the message by " + e.RetryAfter.String() + ", past its deadline"
	if e.Code != 0 {
		s += " (stands for " + strconv.Itoa(int(e.Code)) + ")"
	}
	return s
}

// Is reports whether target is ErrBackpressure.
func (e *BackpressureError) Is(target error) bool { return target == ErrBackpressure }

// Unwrap returns the code the limit stands for, so that
// errors.Is(err, errcodes.PairRateLimit) holds for a pair backpressure. It
// returns nil for the tier.
func (e *BackpressureError) Unwrap() error {
	if e.Limit == LimitTier {
		return nil
	}
	return e.Code
}

// SendError reports a message that was not accepted, or whose outcome is
// unknown. It wraps the cause: an *errcodes.Error for Meta's answers
// (matchable with errors.Is against the errcodes constants), or the
// transport's error.
type SendError struct {
	// State is StateFailed, StateNotSubmitted or StateSubmittedUnknown.
	State SendState
	// IdempotencyKey is the message's key (also sent as
	// biz_opaque_callback_data when the request went out).
	IdempotencyKey string
	// Attempts is the number of requests made.
	Attempts int
	// Err is the cause.
	Err error
}

// Error describes the state and the cause.
func (e *SendError) Error() string {
	return "cloudapi: send " + string(e.State) + " after " + strconv.Itoa(e.Attempts) + " attempts: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *SendError) Unwrap() error { return e.Err }

// Is reports whether target is ErrSubmittedUnknown and the outcome is
// unknown.
func (e *SendError) Is(target error) bool {
	return target == ErrSubmittedUnknown && e.State == StateSubmittedUnknown
}

// StateOf returns the state an error from Send leaves the message in:
// StateAccepted for nil, the state a *SendError or *BackpressureError
// carries, and StateNotSubmitted otherwise (invalid input, context ended
// before sending).
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
		return bp.SendState
	}
	return StateNotSubmitted
}
