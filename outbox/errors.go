package outbox

import (
	"errors"

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
	// ErrClosed is returned by calls on a closed Outbox.
	ErrClosed = errors.New("outbox: closed")
	// ErrDrop may be returned (wrapped) by a revalidation hook to drop an
	// item: it becomes failed with the hook's reason. Returning an error
	// that matches ErrExpired makes it expired instead.
	ErrDrop = errors.New("outbox: dropped by revalidation")
)

// Limits an outbox rejection can name besides cloudapi's.
const (
	// LimitQueue: the whole queue is at capacity (WithCapacity).
	LimitQueue cloudapi.Limit = "outbox_queue"
	// LimitLane: the recipient's lane is at capacity (WithLaneCapacity).
	LimitLane cloudapi.Limit = "outbox_lane"
	// LimitServiceWindow: the user's customer service window is closed.
	LimitServiceWindow cloudapi.Limit = "service_window"
)

// RejectError reports a message that Enqueue refused: nothing was stored.
// It carries the same fields as a *cloudapi.BackpressureError (it embeds
// one: Limit, Scope, Code, RetryAfter, ExpiresAt, SendState
// not_submitted, IdempotencyKey), so that
//
//	var bp *cloudapi.BackpressureError
//	errors.As(err, &bp)
//
// holds too, and Reason is one of ErrQueueFull, ErrExpired or
// ErrOutsideWindow, matched with errors.Is:
//
//	var re *outbox.RejectError
//	switch {
//	case errors.Is(err, outbox.ErrQueueFull): // try later: re.RetryAfter
//	case errors.Is(err, outbox.ErrExpired):   // too late: drop or reword it
//	case errors.As(err, &re):                 // re.Limit, re.Code
//	}
type RejectError struct {
	*cloudapi.BackpressureError
	// Reason is ErrQueueFull, ErrExpired or ErrOutsideWindow.
	Reason error
}

// Error describes the rejection.
func (e *RejectError) Error() string {
	s := e.Reason.Error()
	if e.BackpressureError != nil {
		s += ": " + string(e.Limit)
		if e.Code != 0 {
			s += " (" + e.Code.Error() + ")"
		}
	}
	return s
}

// Unwrap returns the reason and the embedded *cloudapi.BackpressureError
// (itself matching cloudapi.ErrBackpressure and the Meta code it stands
// for).
func (e *RejectError) Unwrap() []error {
	if e.BackpressureError == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.BackpressureError}
}
