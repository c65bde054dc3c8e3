// Package writewindow lets this module's senders pace a number by the
// writes themselves (throughput's window of writes, see
// throughput/window.go) without exported names in throughput: the window
// is sound only when every write of the number is let through it and
// reported, which the cloudapi Client's write-time check does and a
// user's ReserveN caller does not. throughput sets the variables when it
// is initialised, which Go does before any package that imports
// throughput.
package writewindow

import "time"

// Option holds throughput's func() throughput.Option that gives a Limiter
// (New only; none with a Store, whose writes other processes make) a
// window of writes, and stops it stretching its slots for lateness: the
// window keeps every second of writes within the figure however late
// they are. A caller asserts it once, at its own initialisation:
//
//	var windowed = writewindow.Option.(func() throughput.Option)
var Option any

// Let holds throughput's
// func(*throughput.Limiter, time.Time) (writewindow.Ticket, time.Duration):
// asked at t, just before a send admitted by a reservation writes its
// bytes, it returns a Ticket when the write may go, or else how long from
// t until it may (a wait that ends when the window has room; another Let
// then decides). A Limiter without a window returns a nil Ticket and no
// wait: its senders follow its tolerance instead.
var Let any

// On holds throughput's func(*throughput.Limiter) bool: whether the
// Limiter has a window of writes (Option given, and no Store).
var On any

// Ticket is a write Let let through: exactly one of its methods is called
// once, Wrote when the bytes may have left (at the instant they were out,
// or later: a later instant is safe, an earlier one is not), Drop when
// none ever will.
type Ticket interface {
	Wrote(t time.Time)
	Drop()
}
