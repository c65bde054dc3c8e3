package pairlimit

import (
	"context"
	"errors"
	"time"

	"github.com/wapace/wapace/pairlimit/pairstore"
)

// ErrStore is matched (with errors.Is) by the error of every decision a
// [Store] could not make: a Reservation that is not OK because of it means
// nothing was reserved, and its messages must not be sent. The error also
// unwraps to the store's own error and names the decision that failed
// ("pairlimit: store reserve: ...").
var ErrStore = errors.New("pairlimit: store unavailable")

// storeError wraps the error a Store returned. It matches ErrStore and
// unwraps to the store's own error.
type storeError struct {
	// Op is the decision: "reserve", "next", "cancel", "refuse" or "accept".
	Op  string
	Err error
}

// Error returns "pairlimit: store <op>: <err>".
func (e *storeError) Error() string { return "pairlimit: store " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the store's error.
func (e *storeError) Unwrap() error { return e.Err }

// Is reports whether target is ErrStore.
func (e *storeError) Is(target error) bool { return target == ErrStore }

// Store keeps the per-pair [pairstore.State] of a [Limiter], so that several limiters,
// in one process or many, pace the same pairs as one. Each method is one
// decision, made atomically (one Lua script, one transaction, one lock) on
// the instant and the policy figures the caller passes: a store keeps state
// only, and applies exactly the pure [pairstore.State] method named in each method's
// doc. A method that fails must change nothing; its error is wrapped in a
// error by the limiter.
//
// The default store, used when no [WithStore] option is given, is an
// in-memory sharded table. Implementations must be safe for concurrent use.
type Store interface {
	// Reserve loads p's State (the zero State if none). If State.Next(t)
	// is later than t + maxWait, it changes nothing and returns ok false
	// (with Ticket.Act set to State.Next(t)). Otherwise it applies
	// State.Reserve(t, cost, id) with a fresh id (non-zero, see Ticket.ID),
	// stores the result and returns the ticket (pairstore.Ticket.Act is when the
	// messages may go) and ok true. cost is n x Interval + margin, already
	// computed. The state must be kept at least until State.Expired holds.
	Reserve(ctx context.Context, p Pair, t time.Time, cost, maxWait time.Duration) (tk pairstore.Ticket, ok bool, err error)
	// Next returns State.Next(t) for p's State, changing nothing (the
	// zero State: t).
	Next(ctx context.Context, p Pair, t time.Time) (time.Time, error)
	// Cancel applies State.Cancel(tk, t) and stores the result if it
	// reports true; nothing otherwise (no State: nothing). It reports
	// whether anything was given back.
	Cancel(ctx context.Context, p Pair, t time.Time, tk pairstore.Ticket) (bool, error)
	// Refuse applies State.Refuse(t, holds), stores the result (keeping it
	// at least until State.Expired(now, memory) holds) and returns the hold.
	Refuse(ctx context.Context, p Pair, t time.Time, holds []time.Duration, memory time.Duration) (time.Duration, error)
	// Accept applies State.Accept to p's State, if it has one.
	Accept(ctx context.Context, p Pair, t time.Time) error
}

// WithStore makes the Limiter keep its pairs' state in s instead of its own
// memory, so that every limiter using s paces the same pairs as one. A nil
// s keeps the default in-memory store. With a store, Len reports 0.
func WithStore(s Store) Option {
	return func(l *Limiter) {
		if s != nil {
			l.store = s
		}
	}
}
