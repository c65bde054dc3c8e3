// Package instant turns instants into int64 nanoseconds, the form pacing
// state is kept in, and back, on a scale that a step of the system's wall
// clock does not move.
//
// time.Now carries two readings: the wall clock, which NTP (or an
// operator) may step forward or back while the process runs, and the
// monotonic clock, which only moves forward at the pace of time. UnixNano
// keeps only the first. Pacing state kept in nanoseconds from UnixNano
// then shifts, at a step, against the instants asked after it: a step
// forward of a second makes the writes of the last second look older than
// they are, and a number's window of writes lets a second's worth more go
// at once; a step back holds every send for the step.
//
// A Scale anchored at a clock's reading counts nanoseconds from the
// anchor on the monotonic clock, whenever both readings have one: the
// instants of one process stay in step with each other whatever the wall
// clock does. Instants without a monotonic reading (a simulated clock's,
// time.Unix's, a Time read from a database) are taken by their wall
// reading, as UnixNano does; so is every instant on the zero Scale, which
// is what state shared with other processes (a Store) must use, since
// only the wall clock is common to them.
package instant

import (
	"time"

	"github.com/wapace/wapace/internal/sat"
)

// Scale converts instants to nanoseconds and back. The zero Scale is the
// wall clock: Nanos is UnixNano and Time is time.Unix(0, ns).
type Scale struct {
	anchor time.Time // with a monotonic reading, or the zero Time (the wall clock)
	ns     int64     // anchor's UnixNano: 0 for the wall clock (no process starts at the epoch)
}

// anchor is the one anchor of every monotonic Scale of the process, so
// that two of them give the same Time for the same nanoseconds.
var anchor = time.Now()

// Of returns the Scale for a clock whose reading now is: a monotonic
// scale if now carries a monotonic reading (the real clock's do), the
// wall clock otherwise (a simulated clock's do not). Every monotonic
// Scale of the process is anchored at one instant, read at its start.
func Of(now time.Time) Scale {
	if now == now.Round(0) { // Round(0) strips only the monotonic reading
		return Scale{}
	}
	return Scale{anchor: anchor, ns: anchor.UnixNano()}
}

// Monotonic reports whether s counts on the monotonic clock.
func (s *Scale) Monotonic() bool { return s.ns != 0 }

// Nanos returns t in nanoseconds on s: the anchor's wall reading plus the
// time from the anchor to t, on the monotonic clock when t has a reading
// of it; UnixNano otherwise. An instant too far from the anchor for a
// Duration sticks at the end of the int64 range.
func (s *Scale) Nanos(t time.Time) int64 {
	if s.ns == 0 {
		return t.UnixNano() // inlined: the wall clock costs what it did
	}
	return s.fromAnchor(t)
}

// fromAnchor is Nanos on a monotonic Scale.
func (s *Scale) fromAnchor(t time.Time) int64 {
	if t == t.Round(0) { // Round(0) strips only the monotonic reading
		return t.UnixNano()
	}
	return sat.Add(s.ns, int64(t.Sub(s.anchor)))
}

// Time returns the instant ns nanoseconds on s: for a monotonic Scale, one
// with a monotonic reading (so that Sub and comparisons with the clock's
// own readings use it), whose wall reading is ns.
func (s *Scale) Time(ns int64) time.Time {
	if s.ns == 0 {
		return time.Unix(0, ns)
	}
	return s.anchor.Add(time.Duration(sat.Sub(ns, s.ns)))
}
