package cloudapi

import (
	"context"
	"fmt"
	"time"

	"github.com/wapace/wapace/errcodes"
)

// Hooks follows each send from start to end, for tracing and metrics
// (package otelwapace implements it with OpenTelemetry; cloudapi itself
// imports no telemetry library). Install it with WithHooks. Its methods are
// called on the sending goroutine and must not block; they must be safe
// for concurrent use by multiple goroutines.
type Hooks interface {
	// SendStart is called when Send or SendBurst has validated its n
	// messages from business number from and is about to admit them. The
	// context it returns replaces ctx for the rest of the send: the
	// requests to Meta are made with it, and it is the one given to
	// Attempt and SendEnd. Return ctx itself to change nothing.
	SendStart(ctx context.Context, from string, n int) context.Context
	// Attempt is called after each request to Meta with the attempt's
	// Event: Wait is how long the message waited for its slot, Held the
	// limit that held it, Duration the request's.
	Attempt(ctx context.Context, ev Event)
	// SendEnd is called when the send ends, with each message's state
	// (states[i] is "" for a message never attempted) and the send's
	// error. states belongs to the Client: do not keep it.
	SendEnd(ctx context.Context, from string, states []SendState, err error)
}

// WithHooks calls h through every send (see Hooks). Giving it twice keeps
// the last.
func WithHooks(h Hooks) Option {
	return func(c *Client) error {
		if h == nil {
			return fmt.Errorf("%w: nil hooks", ErrInvalidOption)
		}
		c.hooks = h
		return nil
	}
}

// holdNote tracks which limit held an attempt longest, for Event.Held.
type holdNote struct {
	held     errcodes.Hold // the limit that held it longest before its admission
	heldFor  time.Duration // how long
	admitted time.Time     // when it was admitted
}

// note records that limit h holds the attempt for d before its admission.
func (n *holdNote) note(h errcodes.Hold, d time.Duration) {
	if d > n.heldFor {
		n.held, n.heldFor = h, d
	}
}

// by is the limit that held a message going at `at` longest: the one
// noted before its admission, or the number's throughput if its slot made
// it wait longer.
func (n *holdNote) by(at time.Time) errcodes.Hold {
	if d := at.Sub(n.admitted); d > 0 && d > n.heldFor {
		return errcodes.HoldPhoneNumber
	}
	return n.held
}

// wroteAt is when the write-time check let message's body go (so that a
// wait for a new slot there counts in Wait, not in the request's
// Duration), or posted if it never ran (or g is nil).
func wroteAt(g *gate, posted time.Time) time.Time {
	if g == nil {
		return posted
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.checked.After(posted) {
		return g.checked
	}
	return posted
}
