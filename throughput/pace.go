package throughput

import (
	"math"
	"slices"
	"time"

	"github.com/wapace/wapace/internal/sat"
)

// Write-time pacing. A Limiter decides when a send may leave; Meta counts
// when it arrives. A send whose bytes go out late (a descheduled goroutine,
// a GC pause, a dial, a store round trip) lands next to the sends after it,
// and a window of one second then holds more than the limit. Two things
// keep the windows within the figure on the wall clock:
//
//   - the tolerance: the sender checks, just before the bytes go out, how
//     late the send is; a send later than Tolerance() gives its slot back
//     and takes a new one (cloudapi does this in its request body's first
//     read, after the connection is ready and before any byte is flushed);
//   - the margin: the bucket's interval is stretched by (1 + margin), so
//     that a window of 1 s + margin holds no more than PerSecond().
//
// With a burst b and an interval T, a window of one second holds at most
// PerSecond() sends whose lateness differs by less than margin + T. A
// tolerance tau therefore needs a margin of max(0, tau + w - T/2), w a
// recent 99th percentile of the time from the check to the bytes being
// out: half an interval is left for what the sender cannot see (the
// network, the far end). The tolerance is at least T/2 and otherwise the
// one that costs least: the share of recent checks later than it (each
// takes a new slot, and its old slot passed unused) plus its margin as a
// share of a second. Lateness comes in stalls (a process not scheduled for
// 100 ms makes every send due in that time late together): re-slotting
// those costs the stall once, where a margin as long as the stall would
// cost it in every second. On an idle machine every check is within T/2,
// the margin is 0 and the rate is the bare rule's; under load the margin
// follows what is observed, up to maxMargin.
//
// The quantiles are per Limiter (per process), over the last lateSamples
// observations, recomputed every lateEvery. Limiters sharing a Store pace
// one bucket with their own figures, and a Limiter cannot see the others':
// one that let sends go 30 ms late, spaced for that, next to one spacing
// its sends for none, would put more than the figure into a second. So
// with a Store the tolerance stays at T/2 for every Limiter (later checks
// take new slots) and the margin covers only the write's 99th percentile;
// processes then differ only by what their writes take after the check.
const (
	lateSamples = 256
	lateEvery   = 32
	writeRank   = lateSamples - 1 - lateSamples/100 // the 99th percentile
	maxMargin   = 250 * time.Millisecond
	marginStep  = time.Millisecond // the margin moves in steps, so that the interval changes seldom
)

// lateness is a ring of recent lateness samples.
type lateness struct {
	check, write [lateSamples]int64
	n            int // samples recorded, saturating at lateSamples
	next         int // where the next sample goes
	since        int // samples since the last recomputation
}

// add records one sample and reports whether it is time to recompute.
func (r *lateness) add(check, write time.Duration) bool {
	r.check[r.next], r.write[r.next] = int64(max(check, 0)), int64(max(write, 0))
	r.next = (r.next + 1) % lateSamples
	r.n = min(r.n+1, lateSamples)
	r.since++
	if r.since < lateEvery {
		return false
	}
	r.since = 0
	return true
}

// figures returns the tolerance and margin for an interval T from the
// samples: the write's 99th percentile w, and the tolerance that costs
// least, where a tolerance tau costs the share of checks later than it
// (each takes a new slot, and its old one passed unused) plus the margin
// it needs, max(0, tau + w - T/2), as a share of a second.
func (r *lateness) figures(interval time.Duration, shared bool) (tolerance, margin time.Duration) {
	sorted := func(s []int64) []int64 {
		c := slices.Clone(s[:r.n])
		slices.Sort(c)
		return c
	}
	w := time.Duration(sorted(r.write[:])[r.n*writeRank/lateSamples])
	half := interval / 2
	if shared {
		return half, roundMargin(w)
	}
	check := sorted(r.check[:])
	best, bestCost := half, math.Inf(1)
	later := r.n // checks later than tau, for tau = half first
	for later > 0 && time.Duration(check[r.n-later]) <= half {
		later--
	}
	for k := r.n - later - 1; k < r.n; k++ { // tau = half, then each later sample
		tau := half
		if k >= 0 {
			tau = max(time.Duration(check[k]), half)
		}
		for later > 0 && time.Duration(check[r.n-later]) <= tau {
			later--
		}
		if tau > maxMargin+half {
			break
		}
		m := max(tau+w-half, 0)
		if cost := float64(later)/float64(r.n) + m.Seconds(); cost < bestCost {
			best, bestCost = tau, cost
		}
	}
	return best, roundMargin(max(best+w-half, 0))
}

// roundMargin rounds a margin up to a step, and caps it.
func roundMargin(m time.Duration) time.Duration {
	return min((m+marginStep-1)/marginStep*marginStep, maxMargin)
}

// ObserveSend records one send this Limiter admitted for slot: checked is
// when the sender checked it just before writing, wrote when its bytes went
// out (the zero Time when the check gave the slot back and took a new one).
// The Limiter keeps recent high quantiles of how late the checks and the
// writes were, in memory, and derives [Limiter.Tolerance] and
// [Limiter.Margin] from them, unless [WithHeadroom] fixed the margin.
// Observations made while the number is held are ignored. It is safe for
// concurrent use and costs a few nanoseconds, plus a sort of 256 samples
// every 32 observations.
func (l *Limiter) ObserveSend(slot, checked, wrote time.Time) {
	l.init()
	if l.opts.fixed {
		return
	}
	write := time.Duration(0)
	if !wrote.IsZero() {
		write = wrote.Sub(checked)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.late.add(checked.Sub(slot), write) {
		return
	}
	tol, margin := l.late.figures(l.interval0, l.opts.store != nil)
	l.retune(checked.UnixNano(), tol, margin)
}

// retune moves the tolerance and the margin towards tol and margin at t,
// in the safe order: a stricter figure (a lower tolerance, a higher
// margin) applies at once; a looser one only once every slot handed out
// under the stricter one has gone and its second has passed (the latest
// slot plus 1 s), so that no second at Meta holds sends let late by one
// figure and spaced by the other. Called with l.mu held.
func (l *Limiter) retune(t int64, tol, margin time.Duration) {
	settled := sat.Add(l.lastSlot.Load(), int64(time.Second))
	cur := time.Duration(l.tolerance.Load())
	switch {
	case tol <= cur:
		l.tolerance.Store(int64(tol))
		l.looseTolAt = 0
	case l.looseTolAt == 0:
		l.looseTolAt = settled
	case t >= l.looseTolAt:
		l.tolerance.Store(int64(tol))
		l.looseTolAt = 0
	}
	apply := false
	switch {
	case margin >= l.margin:
		apply, l.looseMarginAt = margin != l.margin, 0
	case l.looseMarginAt == 0:
		l.looseMarginAt = settled
	case t >= l.looseMarginAt:
		apply, l.looseMarginAt = true, 0
	}
	if apply {
		l.margin = margin
		l.applyLocked(t)
	}
}

// Tolerance returns how late after its slot a send may start writing: a
// sender that finds itself later than this gives the slot back
// ([Reservation.CancelAt] at the slot's instant) and reserves again. It is
// half the bucket's interval at least, more when the recent lateness
// observed with ObserveSend is larger (see Margin).
func (l *Limiter) Tolerance() time.Duration {
	l.init()
	return time.Duration(l.tolerance.Load())
}

// Margin returns the time by which the Limiter stretches one second when
// it spaces sends: a window of 1 s + Margin() holds at most PerSecond()
// sends, so that sends that leave up to Margin() + one interval apart in
// lateness still fit one second at Meta. It is 0 until ObserveSend has seen
// lateness above half an interval, and always 0 with WithHeadroom.
func (l *Limiter) Margin() time.Duration {
	l.init()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.margin
}

// Pause holds the number until until, as a refusal's hold does but
// counting no refusal: sends not yet written wait for it (a sender's
// write-time check gives their slots back and takes new ones after it).
// A sender pauses the number when a send's bytes went out later than its
// check allowed (the process was descheduled between the check and the
// write): the sends after it then shift by that much instead of arriving
// bunched with it. With a Store the pause is shared like any hold.
func (l *Limiter) Pause(until time.Time) {
	l.init()
	u := until.UnixNano()
	l.mu.Lock()
	l.heldUntil = max(l.heldUntil, u)
	l.mu.Unlock()
	extend(&l.b, l.opts, u)
}
