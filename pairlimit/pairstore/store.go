package pairstore

import (
	"context"
	"time"
)

// Pair is the pair a [Store] keeps a [State] for: a business phone number
// ID and a recipient, as [github.com/wapace/wapace/pairlimit.Pair] gives
// them (it implements Pair). A store keys on these two strings.
type Pair interface {
	// From returns the business phone number ID.
	From() string
	// To returns the recipient in canonical form: E.164 digits without
	// "+", or the business-scoped user ID.
	To() string
}

// Store keeps the per-pair [State] of a pair limiter
// ([github.com/wapace/wapace/pairlimit.WithStore]), so that several
// limiters, in one process or many, pace the same pairs as one. Each
// method is one decision, made atomically (one Lua script, one
// transaction, one lock) on the instant and the policy figures the caller
// passes: a store keeps state only, and applies exactly the pure State
// method named in each method's doc. A method that fails must change
// nothing; the limiter wraps its error in one that matches
// [github.com/wapace/wapace/pairlimit.ErrStore].
//
// The default store, used when no WithStore option is given, is the
// limiter's own in-memory sharded table
// ([github.com/wapace/wapace/pairlimit.NewMemoryStore]). Implementations
// must be safe for concurrent use.
type Store interface {
	// Reserve loads p's State (the zero State if none). If State.Next(t)
	// is later than t + maxWait, it changes nothing and returns ok false
	// (with Ticket.Act set to State.Next(t)). Otherwise it applies
	// State.Reserve(t, cost, id) with a fresh id (non-zero, see Ticket.ID),
	// stores the result and returns the ticket (Ticket.Act is when the
	// messages may go) and ok true. cost is n x Interval + margin, already
	// computed. The state must be kept at least until State.Expired holds.
	Reserve(ctx context.Context, p Pair, t time.Time, cost, maxWait time.Duration) (tk Ticket, ok bool, err error)
	// Next returns State.Next(t) for p's State, changing nothing (the
	// zero State: t).
	Next(ctx context.Context, p Pair, t time.Time) (time.Time, error)
	// Cancel applies State.Cancel(tk, t) and stores the result if it
	// reports true; nothing otherwise (no State: nothing). It reports
	// whether anything was given back.
	Cancel(ctx context.Context, p Pair, t time.Time, tk Ticket) (bool, error)
	// Refuse applies State.Refuse(t, holds), stores the result (keeping it
	// at least until State.Expired(now, memory) holds) and returns the hold.
	Refuse(ctx context.Context, p Pair, t time.Time, holds []time.Duration, memory time.Duration) (time.Duration, error)
	// Accept applies State.Accept to p's State, if it has one.
	Accept(ctx context.Context, p Pair, t time.Time) error
}
