package outbox

import (
	"errors"
	"strconv"

	"github.com/wapace/wapace/cloudapi"
)

// Sentinels matched with errors.Is.
var (
	// ErrQueueFull is matched by a *RejectError when the queue or the
	// recipient's lane is at capacity.
	ErrQueueFull = errors.New("outbox: queue full")
	// ErrExpired is matched by a *RejectError when the message would wait
	// past its freshness deadline (or already passed it).
	ErrExpired = errors.New("outbox: message would expire before it could be sent")
	// ErrOutsideWindow is matched by a *RejectError for a free-form message
	// to a user who has not written within the customer service window
	// (Meta would answer 131047). Only with WithServiceWindow.
	ErrOutsideWindow = errors.New("outbox: outside the customer service window")
	// ErrNotFound is returned by Get for an unknown key.
	ErrNotFound = errors.New("outbox: no such item")
	// ErrInvalidDSN is matched by Open's error for a DSN it cannot use.
	ErrInvalidDSN = errors.New("outbox: invalid DSN")
	// ErrInvalidOption is matched by Open's error for a bad option.
	ErrInvalidOption = errors.New("outbox: invalid option")
	// ErrSchemaTooNew is matched by Open's error for a database written
	// by a newer version of this package (a schema version above
	// SchemaVersion): it is left untouched.
	ErrSchemaTooNew = errors.New("outbox: database schema is newer than this code")
	// ErrClosed is returned by calls on a closed Outbox.
	ErrClosed = errors.New("outbox: closed")
	// ErrIdempotencyConflict is matched by Enqueue's error for a message
	// whose idempotency key is stored for another message (another sender
	// or recipient, other content): a key names one message. Nothing is
	// stored. The same message again (its deadline aside) gets the stored
	// item's ticket instead. It also matches
	// cloudapi.ErrIdempotencyConflict.
	ErrIdempotencyConflict = errors.New("outbox: idempotency key names another message")
	// ErrDrop may be returned (wrapped) by a revalidation hook to drop an
	// item: it becomes failed with the hook's reason. Returning an error
	// that matches ErrExpired makes it expired instead.
	ErrDrop = errors.New("outbox: dropped by revalidation")
)

// RejectError reports a message that Enqueue refused: nothing was stored
// or sent. It embeds a *cloudapi.BackpressureError carrying the same
// fields as a backpressured send (Limit, Code, Wait and RetryAfter,
// ExpiresAt, IdempotencyKey), so that
//
//	var bp *cloudapi.BackpressureError
//	errors.As(err, &bp)
//
// holds too and cloudapi.StateOf(err) is cloudapi.StateRefused (not
// sent: safe to send again later). Reason is one of ErrQueueFull,
// ErrExpired or ErrOutsideWindow, matched with errors.Is:
//
//	var re *outbox.RejectError
//	switch {
//	case errors.Is(err, outbox.ErrQueueFull): // try later: re.RetryAfter()
//	case errors.Is(err, outbox.ErrExpired):   // too late: drop or reword it
//	case errors.As(err, &re):                 // re.Limit, re.Code
//	}
type RejectError struct {
	*cloudapi.BackpressureError
	// Reason is ErrQueueFull, ErrExpired or ErrOutsideWindow.
	Reason error
	// Full is "queue" or "lane" for ErrQueueFull (WithCapacity,
	// WithLaneCapacity), "" otherwise.
	Full string
}

// Error describes the rejection.
func (e *RejectError) Error() string {
	s := e.Reason.Error()
	switch {
	case e.Full != "":
		s += ": " + e.Full + " at capacity"
	case e.BackpressureError != nil && e.Code != 0:
		s += ": " + e.Limit.String() + " (" + e.Code.Error() + ")"
	}
	return s
}

// Unwrap returns the reason and the embedded *cloudapi.BackpressureError
// (itself unwrapping to the Meta code it stands for).
func (e *RejectError) Unwrap() []error {
	if e.BackpressureError == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.BackpressureError}
}

// conflictError is Enqueue's error for a key stored for another message.
type conflictError struct{ key string }

func (e *conflictError) Error() string {
	return "outbox: idempotency key " + strconv.Quote(e.key) + " names another message"
}

// Is matches ErrIdempotencyConflict and cloudapi.ErrIdempotencyConflict.
func (e *conflictError) Is(target error) bool {
	return target == ErrIdempotencyConflict || target == cloudapi.ErrIdempotencyConflict
}
