package pairstore

import (
	"math"
	"time"

	"github.com/wapace/wapace/internal/sat"
)

// State is one pair's pacing state as a [Store] keeps it, and the pure
// decision functions over it: the exact rule every store implements. All
// instants are Unix nanoseconds. The zero State owes nothing.
//
// A store keeps one State per [github.com/wapace/wapace/pairlimit.Pair] and applies one method per decision,
// atomically (under a lock, or in one script), with the instant and the
// policy figures the caller passes: the store keeps state only.
type State struct {
	// Due is the earliest instant the pair's next burst may start: the end
	// of its debt, holds included. Zero (or any past instant) owes nothing.
	Due int64
	// Hold is the end of the latest 131056 hold, zero if none.
	Hold int64
	// Fails counts consecutive 131056 answers (saturating).
	Fails uint32
	// Top is the ID of the latest reservation that can still be given back
	// (see Cancel), zero if none.
	Top uint64
}

// Ticket identifies one reservation for an exact give-back. A store returns
// it from Reserve and takes it back in Cancel; callers treat it as opaque.
type Ticket struct {
	// ID is unique among the pair's reservations for as long as any ticket
	// of the pair can still be cancelled. A store that forgets a pair must
	// not hand out again an ID that a live ticket holds (the memory store
	// numbers reservations per shard; a shared store can use a per-store
	// counter). Zero never identifies a reservation.
	ID uint64
	// PrevTop is the pair's Top before the reservation.
	PrevTop uint64
	// PrevDue is the pair's Due before the reservation.
	PrevDue int64
	// Act is the instant the reserved messages may go.
	Act int64
	// End is the pair's Due right after the reservation.
	End int64
}

// KeepAfterDue is how long a store keeps a pair's state after its debt is
// repaid (Due), so that calls whose instants arrive slightly out of order
// still see it. Stores that expire keys set the expiry at
// max(Due, Hold + memory) + KeepAfterDue, memory being the argument of
// Refuse; see [State.Expired].
const KeepAfterDue = time.Second

// Reserve is the pacing rule: a burst of messages whose debt is cost (n x
// Interval + margin) asked at t starts at act = max(t, Due) and leaves the
// pair owing until act + cost (saturating at the largest int64). The new
// reservation, identified by id (non-zero), becomes Top; the ticket records
// what Cancel needs to undo it.
func (s State) Reserve(t int64, cost time.Duration, id uint64) (State, Ticket) {
	act := max(t, s.Due)
	tk := Ticket{ID: id, PrevTop: s.Top, PrevDue: s.Due, Act: act}
	s.Due = sat.Add(act, int64(max(cost, 0)))
	s.Top = id
	tk.End = s.Due
	return s, tk
}

// Next is the read-only query: the instant a burst asked at t could start,
// max(t, Due). It changes nothing.
func (s State) Next(t int64) int64 { return max(t, s.Due) }

// Cancel gives back reservation tk at t, exactly: when tk is the pair's Top
// (no later reservation was made on top of it, or each later one was given
// back first), the pair's Due is still what tk left it, max(tk.End, Hold),
// and its time had not come (t <= tk.Act), the pair owes again what it owed
// before it, Due = max(tk.PrevDue, Hold), and Top returns to tk.PrevTop; it
// reports true. Otherwise it changes nothing and reports false: a later
// reservation already acts after this one's debt (its slot is spent, which
// errs on the safe side), or the messages' time has passed, or tk was given
// back already (a second Cancel is harmless). The Due check makes a store
// with short IDs (the memory store's are 16 bits) safe against an ID that
// came round again.
func (s State) Cancel(tk Ticket, t int64) (State, bool) {
	if tk.ID == 0 || s.Top != tk.ID || t > tk.Act || s.Due != max(tk.End, s.Hold) {
		return s, false
	}
	s.Due = max(tk.PrevDue, s.Hold)
	s.Top = tk.PrevTop
	return s, true
}

// Refuse applies a 131056 answered at t: the pair is held for
// holds[min(Fails, len(holds)-1)] from t (Meta's 4^X seconds: 1 s, 4 s,
// 16 s, 64 s, 256 s), Hold = max(Hold, t + hold), Due = max(Due, Hold), and
// Fails grows by one. Top is unchanged: Cancel never gives back below Hold.
// An empty holds means no hold. It returns the new state and the hold.
func (s State) Refuse(t int64, holds []time.Duration) (State, time.Duration) {
	var hold time.Duration
	if len(holds) > 0 {
		hold = max(holds[min(int(s.Fails), len(holds)-1)], 0)
	}
	s.Hold = max(s.Hold, sat.Add(t, int64(hold)))
	s.Due = max(s.Due, s.Hold)
	if s.Fails < math.MaxUint32 {
		s.Fails++
	}
	return s, hold
}

// Accept records an accepted message: Fails returns to zero.
func (s State) Accept() State {
	s.Fails = 0
	return s
}

// Expired reports whether a store may forget the state at now: its debt
// was repaid KeepAfterDue before now, and it carries no count of 131056
// answers, or its last hold ended memory + KeepAfterDue before now. A
// forgotten state is the zero State. Stores pass as now an instant that a
// reservation's future time cannot raise (the memory store uses the
// earlier of the latest instant asked and its clock).
func (s State) Expired(now int64, memory time.Duration) bool {
	limit := now - int64(KeepAfterDue)
	return s.Due <= limit && (s.Fails == 0 || s.Hold <= limit-int64(memory))
}
