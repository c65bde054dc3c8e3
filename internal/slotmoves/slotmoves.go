// Package slotmoves lets this module's senders use throughput's moving
// reservations (SetMPSAt moving the slots still waiting to the new
// figure's pace) without exported names in throughput: a reservation that
// moves is only safe with a holder that follows every move, which the
// cloudapi Client and throughput's own WaitN do, and a user's ReserveN
// caller does not. throughput sets both when it is initialised, which Go
// does before any package that imports throughput.
package slotmoves

// Option holds throughput's func() throughput.Option that makes a Limiter
// (New only; no effect with a Store) move the reservations still waiting
// at SetMPSAt: earlier for a raise, later for a cut, to the instants a
// bucket at the new figure would have given them. A caller asserts it
// once, at its own initialisation:
//
//	var moving = slotmoves.Option.(func() throughput.Option)
var Option any

// Moved holds throughput's func(throughput.Reservation) <-chan struct{}:
// a channel closed at the next move of the reservation's Limiter (nil for
// a reservation that cannot move). A holder reads it, then TimeToAct, and
// waits for the instant or the channel; when the channel closes it reads
// both again.
var Moved any

// Stale holds throughput's func(throughput.Reservation) bool: whether the
// reservation is kept in a Store and its Limiter's figure was cut since
// it was asked. A Store cannot move the slots it handed out, so a holder
// that finds its reservation stale gives it back and reserves again, at
// the new figure. Moved's channel closes at each such cut.
var Stale any
