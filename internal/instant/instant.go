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
	"sync/atomic"
	"time"

	"github.com/wapace/wapace/internal/sat"
)

// Scale converts instants to nanoseconds and back. The zero Scale is the
// wall clock: Nanos is UnixNano and Time is time.Unix(0, ns).
//
// On a monotonic Scale the nanoseconds are the anchor's wall reading plus
// the time since the anchor on the monotonic clock: equal to UnixNano
// until the wall clock is stepped, and unmoved by a step. Times given and
// returned keep the system's meaning after a step: an instant with a
// monotonic reading is placed by it; one without (read from a database,
// a Store, time.Unix) by its wall reading, less the step; and Time
// returns an instant with both readings, the wall one stepped as the
// clock's are. The step is the one the Scale last saw in an instant it
// was given with both readings (a clock's reading, as a pacer is given on
// every decision): reading no clock of its own, a Scale given only wall
// instants takes them as they are, as UnixNano would.
type Scale struct {
	anchor time.Time  // with a monotonic reading, or the zero Time (the wall clock)
	ns     int64      // anchor's UnixNano: 0 for the wall clock (no process starts at the epoch)
	st     *stepState // shared by the copies of the Scale
}

// stepState is the step of the wall clock a Scale last saw.
type stepState struct {
	ref atomic.Pointer[stepRef] // nil: no step
}

// stepRef is an instant t with both readings whose wall reading is step
// away from the monotonic one (both from the anchor), q rounded.
type stepRef struct {
	t       time.Time
	step, q int64
}

// anchor is the one anchor of every monotonic Scale of the process, so
// that two of them give the same nanoseconds for the same instant.
var anchor = time.Now()

// Of returns the Scale for a clock whose reading is now: a monotonic
// scale if now carries a monotonic reading (the real clock's do), the
// wall clock otherwise (a simulated clock's do not). Every monotonic
// Scale of the process is anchored at one instant, read at its start.
func Of(now time.Time) Scale {
	if !monotonic(now) {
		return Scale{}
	}
	return Scale{anchor: anchor, ns: anchor.UnixNano(), st: new(stepState)}
}

// monotonic reports whether t carries a monotonic reading.
func monotonic(t time.Time) bool { return t != t.Round(0) } // Round(0) strips only that

// Monotonic reports whether s counts on the monotonic clock.
func (s *Scale) Monotonic() bool { return s.ns != 0 }

// Nanos returns t in nanoseconds on s. On a monotonic Scale: for t with a
// monotonic reading, the anchor's wall reading plus the time from the
// anchor to t on the monotonic clock; for t without one, its UnixNano less
// the step of the wall clock the Scale last saw. An instant too far from
// the anchor for a Duration sticks at the end of the int64 range.
func (s *Scale) Nanos(t time.Time) int64 {
	if s.ns == 0 {
		return t.UnixNano() // inlined: the wall clock costs what it did
	}
	return s.fromAnchor(t)
}

// fromAnchor is Nanos on a monotonic Scale.
func (s *Scale) fromAnchor(t time.Time) int64 {
	if !monotonic(t) {
		if r := s.st.ref.Load(); r != nil {
			return sat.Sub(t.UnixNano(), r.step)
		}
		return t.UnixNano()
	}
	m := s.mono(t)
	s.saw(t, t.UnixNano()-m)
	return m
}

// mono is Nanos of t, which has a monotonic reading.
func (s *Scale) mono(t time.Time) int64 { return sat.Add(s.ns, int64(t.Sub(s.anchor))) }

// minStep is the least difference between the wall clock and the
// monotonic one, since the anchor, that counts as a step: below it the
// difference is the two readings' jitter (time.Now reads the two clocks
// one after the other, and a thread may be preempted between them), and
// instants are their wall readings, as without a step. NTP steps only
// past 128 ms (ntpd) or a configured threshold (chrony, commonly 1 s or
// 0.1 s); below that it slews both clocks alike.
const minStep = 50 * time.Millisecond

// saw records the step of an instant t with both readings (its wall
// reading less its nanoseconds). It writes only when the step, rounded to
// the millisecond, changed: the readings' jitter writes nothing.
func (s *Scale) saw(t time.Time, step int64) {
	q := int64(0)
	if step <= -int64(minStep) || step >= int64(minStep) {
		q = int64(time.Duration(step).Round(time.Millisecond))
	}
	r := s.st.ref.Load()
	switch {
	case r == nil && q == 0, r != nil && r.q == q:
	case q == 0:
		s.st.ref.Store(nil)
	default:
		s.st.ref.Store(&stepRef{t: t, step: step, q: q})
	}
}

// Time returns the instant ns nanoseconds on s. On a monotonic Scale it
// carries a monotonic reading (so that Sub and comparisons with the
// clock's readings use it; two Times of the same ns are Equal) and, as
// its wall reading, ns plus the step of the wall clock the Scale last saw.
func (s *Scale) Time(ns int64) time.Time {
	if s.ns == 0 {
		return time.Unix(0, ns)
	}
	if r := s.st.ref.Load(); r != nil {
		// Add keeps the monotonic reading anchor.Add would give, and
		// carries r's stepped wall reading.
		return r.t.Add(time.Duration(sat.Sub(ns, s.mono(r.t))))
	}
	return s.anchor.Add(time.Duration(sat.Sub(ns, s.ns))) // wall reading ns
}
