package pairlimit

import (
	"errors"

	"github.com/wapace/wapace/pairlimit/pairstore"
)

// ErrStore is matched (with errors.Is) by the error of every decision a
// [pairstore.Store] could not make: a Reservation that is not OK because of it means
// nothing was reserved, and its messages must not be sent. The error also
// unwraps to the store's own error and names the decision that failed
// ("pairlimit: store reserve: ...").
var ErrStore = errors.New("pairlimit: store unavailable")

// storeError wraps the error a pairstore.Store returned. It matches ErrStore and
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

// WithStore makes the Limiter keep its pairs' state in s instead of its own
// memory, so that every limiter using s paces the same pairs as one. A nil
// s keeps the default in-memory store.
//
// A store from NewMemoryStore, in this process, keeps its instants on the
// monotonic clock (on the real clock), as the default one does: a step of
// the system's wall clock moves no pair's debt. Any other store keeps the
// wall clock's, the one clock processes share, which they must agree on:
// a step of it moves every debt by its length.
func WithStore(s pairstore.Store) Option {
	return func(l *Limiter) {
		if s != nil {
			l.store = s
		}
	}
}
