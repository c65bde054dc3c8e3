package throughput

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/wapace/wapace/internal/sat"
)

// Write-time pacing. A Limiter decides when a send may leave; Meta counts
// when it arrives. (A cloudapi Client without a Store counts its writes
// instead: its limiters have a window of writes, window.go, and the
// tolerance and margin below do not apply to them.) A send whose bytes go out late (a descheduled goroutine,
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
// network, the far end). The tolerance is at least T/2, and at least
// minTolerance (5 ms) unless the margin that needs is beyond maxMargin,
// and at least the median of the recent checks (whatever margin that
// needs, beyond maxMargin too: a lower rate, where a tolerance below most
// checks' lateness gives most slots back, and one below all of them sends
// nothing), and otherwise the one that costs least: the share of recent
// checks later than it (each takes a new slot, and its old slot passed
// unused) plus its margin as a share of a second. The 5 ms are what a
// sender waiting on Go's timers cannot avoid: an idle Go process sleeps
// in whole milliseconds (Linux's epoll_wait), so a timer wakes up to a
// millisecond late, more with 64 senders on 2 cores; at 10,000 msg/s (T/2
// = 50 µs) half an interval gave most slots back, each re-slot leaving its
// slot unused, and the number delivered 60 % of its figure. A margin of 5 ms
// costs half a percent. Lateness comes in stalls (a process not scheduled for
// 100 ms makes every send due in that time late together): re-slotting
// those costs the stall once, where a margin as long as the stall would
// cost it in every second. On an idle machine every check is within T/2,
// the margin is 0 and the rate is the bare rule's; under load the margin
// follows what is observed, up to maxMargin.
//
// The quantiles are per Limiter (per process), over the last lateSamples
// observations, recomputed every lateEvery. Limiters sharing a Store pace
// one bucket, each stretching the interval of its own reservations only,
// and a Limiter cannot see the others' figures: one that lets its sends go
// 30 ms late next to others spacing their sends for none would put more
// than the figure into a second. So a Limiter that takes a share f of the
// bucket's slots (measured from its own slots: how many it had per
// interval) stretches its own slots by margin / f: its slots alone then
// stretch any second by the margin its own lateness needs, whatever the
// others do. Its cost to the number is the same margin, so with a Store the
// least-cost tolerance weighs a late check by f (a new slot costs the
// number one of f's slots) against the margin; a Limiter alone has f = 1.
// The share is the lower of the one over all samples and the one over the
// last lateEvery, so that a Limiter whose share falls (another process
// joins) stretches more at once.
//
// A write later than what the margin covers (its slot + Margin() as
// stretched by its share + half an interval) pauses the number for the
// excess and moves the bucket's next free instant later by as much
// (ObserveSend): the sends after it then shift by that much instead of
// arriving bunched with it. The pause alone is not enough: it holds only
// the slots due within it, and at 80 msg/s (T = 12.66 ms) a write 12.69
// ms late, paused 6.36 ms, held none, and the second from the late
// arrival held it and the 80 slots after it.
const (
	lateSamples  = 256
	lateEvery    = 32
	writeRank    = lateSamples - 1 - lateSamples/100 // the 99th percentile
	maxMargin    = 250 * time.Millisecond
	minTolerance = 5 * time.Millisecond
	marginStep   = time.Millisecond // the margin moves in steps, so that the interval changes seldom
	minShare     = 0.01             // the least share of the slots a Limiter assumes it has
)

// lateness is a ring of recent lateness samples.
type lateness struct {
	n       int // samples recorded, saturating at lateSamples
	next    int // where the next sample goes
	since   int // samples since the last recomputation
	s       [lateSamples]sample
	scratch [lateSamples]int64 // the late checks, sorted by figures without allocating
}

// sample is one observation, in nanoseconds: how late the check and the
// write were (never negative), and the slot (to measure the share of the
// bucket's slots). One sample's fields sit together, so that recording one
// touches one cache line: a Client holds a Limiter per number, and every
// send records one sample.
type sample struct{ check, write, slot int64 }

// writeTop is how many of the largest write samples figures keeps to find
// the 99th percentile: at rank r.n*writeRank/lateSamples, it is the
// r.n - r.n*writeRank/lateSamples = ceil(r.n*3/256)-th largest, at most 3.
const writeTop = lateSamples - writeRank

// add records one sample and reports whether it is time to recompute.
func (r *lateness) add(slot int64, check, write time.Duration) bool {
	r.s[r.next] = sample{check: int64(max(check, 0)), write: int64(max(write, 0)), slot: slot}
	r.next = (r.next + 1) % lateSamples
	r.n = min(r.n+1, lateSamples)
	r.since++
	if r.since < lateEvery {
		return false
	}
	r.since = 0
	return true
}

// share returns the share of the bucket's slots the samples show this
// Limiter took with an interval T: the slots observed per interval, over
// all samples and over the last lateEvery, the lower of the two, in
// [minShare, 1].
func (r *lateness) share(interval time.Duration) float64 {
	over := func(k int) float64 {
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for i := range k {
			v := r.s[(r.next-1-i+lateSamples)%lateSamples].slot
			lo, hi = min(lo, v), max(hi, v)
		}
		if k < 2 || hi <= lo {
			return 1
		}
		return float64(k-1) * float64(interval) / float64(hi-lo)
	}
	f := min(over(r.n), over(min(r.n, lateEvery)))
	return min(max(f, minShare), 1)
}

// writeQuantile returns the write samples' 99th percentile: the one at
// rank r.n*writeRank/lateSamples in ascending order, found among the
// writeTop largest (no sort: figures runs on the send path).
func (r *lateness) writeQuantile() time.Duration {
	k := r.n - r.n*writeRank/lateSamples // 1 to writeTop
	var top [writeTop]int64              // the k largest so far, descending
	for i := range k {
		top[i] = math.MinInt64
	}
	for _, s := range r.s[:r.n] {
		if s.write <= top[k-1] {
			continue
		}
		i := k - 1
		for ; i > 0 && top[i-1] < s.write; i-- {
			top[i] = top[i-1]
		}
		top[i] = s.write
	}
	return time.Duration(top[k-1])
}

// checksAbove returns the check samples later than half, sorted
// ascending, in r.scratch: the only ones the tolerance can be chosen
// among (an idle machine has none).
func (r *lateness) checksAbove(half time.Duration) []int64 {
	c := r.scratch[:0]
	for _, s := range r.s[:r.n] {
		if time.Duration(s.check) > half {
			c = append(c, s.check)
		}
	}
	slices.Sort(c)
	return c
}

// figures returns the tolerance and margin for an interval T from the
// samples, with the write's 99th percentile w: the tolerance that costs
// least, where a tolerance tau costs the share of checks later than it
// (each takes a new slot, and its old one passed unused), weighed by the
// share f of the bucket's slots this Limiter takes (1 without a Store),
// plus the stretch it needs, max(0, tau + w - T/2), as a share of a
// second. The margin is that stretch divided by f (see the package's
// notes on write-time pacing), capped at maxMargin, but never less than
// what covers the tolerance alone, (tau - T/2) / f; f and w are returned
// too.
//
// The candidates are the least tolerance (the larger of T/2 and
// minTolerance, or T/2 when minTolerance's stretch is beyond maxMargin,
// and at least the median check) and each check later than it, in
// ascending order; a candidate above the least whose stretch is beyond
// maxMargin ends the search (when the least's is, the answer is the
// least, with the margin maxMargin or what covers it alone).
func (r *lateness) figures(interval time.Duration, shared bool) (tolerance, margin time.Duration, f float64, w time.Duration) {
	w = r.writeQuantile()
	half := interval / 2
	f = 1
	if shared {
		f = r.share(interval)
	}
	spread := func(stretch time.Duration) time.Duration {
		return time.Duration(float64(stretch) / f)
	}
	lo := max(half, minTolerance)
	if spread(max(lo+w-half, 0)) > maxMargin {
		lo = half
	}
	late := r.checksAbove(lo)
	j0 := 0 // the first late check above the least tolerance
	if k := r.n / 2; k >= r.n-len(late) {
		// The median check is later than lo: a tolerance below it
		// gives most slots back, and a sender whose checks are all
		// late sends nothing. The least tolerance is the median.
		j0 = k - (r.n - len(late))
		lo = time.Duration(late[j0])
		for j0 < len(late) && late[j0] <= int64(lo) {
			j0++
		}
	}
	best, bestCost := lo, math.Inf(1)
	later := len(late)                    // checks later than tau
	for j := j0 - 1; j < len(late); j++ { // tau = lo, then each later check
		tau := lo
		if j >= j0 {
			tau = time.Duration(late[j])
		}
		for later > 0 && time.Duration(late[len(late)-later]) <= tau {
			later--
		}
		m := max(tau+w-half, 0)
		if j >= j0 && spread(m) > maxMargin {
			break
		}
		if cost := f*float64(later)/float64(r.n) + m.Seconds(); cost < bestCost {
			best, bestCost = tau, cost
		}
	}
	return best, coverMargin(spread(max(best+w-half, 0)), spread(max(best-half, 0))), f, w
}

// roundMargin rounds a margin up to a step, and caps it.
func roundMargin(m time.Duration) time.Duration {
	return min(roundUp(m), maxMargin)
}

// coverMargin returns the margin for a tolerance: stretch (which covers
// the tolerance and the write quantile) rounded up and capped at
// maxMargin, but never less than least (which covers the tolerance
// alone), rounded up: a tolerance the median check needs is covered
// whatever it costs (a lower rate, never no sends).
func coverMargin(stretch, least time.Duration) time.Duration {
	return max(roundMargin(stretch), roundUp(least))
}

// roundUp rounds a margin up to a step.
func roundUp(m time.Duration) time.Duration {
	return (m + marginStep - 1) / marginStep * marginStep
}

// ObserveSend records one send this Limiter admitted for slot: checked is
// when the sender checked it just before writing, wrote when its bytes went
// out (the zero Time when the check gave the slot back and took a new one).
// The Limiter keeps recent high quantiles of how late the checks and the
// writes were, in memory, and derives [Limiter.Tolerance] and
// [Limiter.Margin] from them, unless [WithHeadroom] fixed them (then they
// are those of a Limiter that observes no lateness: see Tolerance). A
// write later than its slot by more than the margin covers (the process
// was descheduled between the check and the write) holds the number for
// the excess from wrote, as a refusal's hold does but counting no refusal
// (shared through the Store like any hold): the sends after it shift by
// that much instead of arriving bunched with it. Observations made while
// the number is held are ignored. Such a write also moves the slots not
// yet handed out later by the excess (at most a second): the pause holds
// only the slots due within it. The limiters of a cloudapi Client without
// a Store count their writes instead (see cloudapi.Client.Number): there
// ObserveSend records nothing. It is safe for concurrent use and costs
// a few nanoseconds, plus, every 32 observations, a pass over the 256
// samples and a sort of the checks later than half an interval.
func (l *Limiter) ObserveSend(slot, checked, wrote time.Time) {
	l.init()
	if l.err != nil || l.win != nil {
		return // it admitted nothing, or its window counts the writes
	}
	write := time.Duration(0)
	if !wrote.IsZero() {
		write = wrote.Sub(checked)
		if over := wrote.Sub(slot) - time.Duration(l.cover.Load()); over > 0 {
			l.shift(wrote, over) // first: from the bucket's instant, not the pause's end
			l.pause(wrote.Add(over))
		}
	}
	check := checked.Sub(slot)
	if l.opts.fixed {
		// The figures follow no lateness, only (with a Store) the share
		// of the slots this Limiter takes.
		check, write = 0, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.late.add(l.b.sc.Nanos(slot), check, write) {
		return
	}
	tol, margin, f, w := l.late.figures(l.interval0, l.opts.store != nil)
	l.retune(l.b.sc.Nanos(checked), tol, margin, f, w)
}

// retune moves the tolerance and the margin towards tol and margin (a
// pair from figures: margin covers tol) at t, in the safe order: a higher
// margin applies at once; a looser figure only once every slot handed out
// under the stricter one has gone and its second has passed (the latest
// slot plus 1 s), so that no second at Meta holds sends let late by one
// figure and spaced by the other:
//
//   - a lower margin applies once it has been wanted that long (a want of
//     a margin as high or higher starts the wait again), and the tolerance
//     falls with it, to tol at most;
//   - a higher tolerance applies once it has been wanted that long, and
//     then at most the one wanted first (the margin raised then covers it,
//     and has not fallen since: a fall voids the rise);
//   - a lower tolerance alone applies only when the margin in force does
//     not cover the tolerance in force (with the write quantile w and
//     share f now: after a change of the interval, SetMPSAt or the
//     adaptive rate); otherwise it would only give more slots back. (At
//     10,000 msg/s the samples span 25 ms: a tolerance that fell with
//     every calm 25 ms, and rose only after a second, sat below the
//     lateness of most sends, each of which gave its slot back.)
//
// Called with l.mu held.
func (l *Limiter) retune(t int64, tol, margin time.Duration, share float64, w time.Duration) {
	settled := sat.Add(l.lastSlot.Load(), int64(time.Second))
	cur := time.Duration(l.tolerance.Load())
	switch {
	case margin >= l.margin:
		if margin != l.margin {
			l.margin, l.share = margin, share
			l.applyLocked(t)
		}
		l.looseMarginAt = 0
	case l.looseMarginAt == 0:
		l.looseMarginAt = settled
	case t >= l.looseMarginAt:
		l.margin, l.share = margin, share
		l.applyLocked(t)
		l.looseMarginAt = 0
		cur = min(cur, tol)
		l.tolerance.Store(int64(cur))
		l.looseTolAt = 0 // a rise wanted under the higher margin is void
	}
	if tol < cur && roundMargin(time.Duration(float64(cur+w-l.interval0/2)/share)) > l.margin {
		cur = tol // not covered: the margin was set for another interval
		l.tolerance.Store(int64(cur))
	}
	switch {
	case tol <= cur:
	case l.looseTolAt == 0:
		l.looseTolAt, l.looseTol = settled, tol
	case t >= l.looseTolAt:
		l.tolerance.Store(int64(min(tol, l.looseTol)))
		l.looseTolAt = 0
	}
}

// Tolerance returns how late after its slot a send may start writing: a
// sender that finds itself later than this gives the slot back
// ([Reservation.CancelAt] at the slot's instant) and reserves again. It is
// half the bucket's interval at least, and at least 5 ms (the margin then
// covers the difference: at 1,000 msg/s a new Limiter has a margin of
// 5 ms), more when the recent lateness observed with ObserveSend is
// larger (see Margin), and never below the median of the recent checks'
// lateness, so that a sender whose checks are all late still sends; with
// [WithHeadroom] lateness does not move it. With
// [WithStore] it starts at half an interval, until the sends observed tell
// the share of the slots the Limiter takes, which the margin for 5 ms
// depends on.
func (l *Limiter) Tolerance() time.Duration {
	l.init()
	return time.Duration(l.tolerance.Load())
}

// Margin returns the time by which the Limiter stretches one second when
// it spaces sends: a window of 1 s + Margin() holds at most PerSecond()
// sends, so that sends that leave up to Margin() + one interval apart in
// lateness still fit one second at Meta. It covers the tolerance's excess
// over half an interval (so it is 0 at rates up to 100 msg/s until
// ObserveSend has seen lateness above half an interval, 5 ms less half an
// interval, rounded up to the millisecond, at higher rates), and the
// write's recent 99th percentile, up to 250 ms; beyond 250 ms only when
// the median check is that late (see Tolerance). With WithHeadroom it
// stays what covers the least tolerance. It is 0 for the limiters of a
// cloudapi Client without a Store, which count their writes instead (see
// cloudapi.Client.Number).
func (l *Limiter) Margin() time.Duration {
	l.init()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.margin
}

// pause holds the number until until, as a refusal's hold does but
// counting no refusal: sends not yet written wait for it (a sender's
// write-time check gives their slots back and takes new ones after it).
// With a Store the pause is shared like any hold.
func (l *Limiter) pause(until time.Time) {
	u := l.b.sc.Nanos(until)
	l.mu.Lock()
	l.heldUntil = max(l.heldUntil, u)
	l.mu.Unlock()
	extend(&l.b, l.opts, u)
}

// maxShift bounds the shift after one late write: a shift of a second
// and an interval leaves every window of one second that holds the late
// arrival one slot short of the figure, however late the write was.
const maxShift = time.Second

// shift moves the slots not yet handed out later by d (at most maxShift
// and an interval), as if the late write at wrote had taken its slot d
// later: the bucket's next free instant moves from max(its own, wrote) by
// d (from before the pause: when the bucket's next free instant is
// within the pause, the pause alone leaves a gap, and a shift from its
// end would cost the number the excess twice). A pause alone holds the
// number from the write for d, which holds no slot when the next one
// handed out is due later (a write 12.69 ms late at 80 msg/s, T = 12.66
// ms, paused 6.36 ms between two slots, and a second from the late
// arrival held it and the 80 slots after it). The slots already handed
// out after the write still go (with a Store, those of other processes
// never see the pause); the window from the late arrival then holds a
// gap of d after them. With a Store the shift is reservations of the
// whole burst, never given back: d / (burst x interval) of them, rounded
// up, at most about a hundred (a second's worth) after the longest stall.
func (l *Limiter) shift(wrote time.Time, d time.Duration) {
	l.mu.Lock()
	interval, burst := l.interval, l.burst
	l.mu.Unlock()
	d = min(d, maxShift+interval)
	t := l.b.sc.Nanos(wrote)
	if l.opts.store == nil {
		l.b.shift(t, d)
		return
	}
	// Reserve(burst) moves the store's TAT by burst intervals from
	// max(TAT, t, hold): as many as d needs, rounded up.
	step := time.Duration(burst) * interval
	for done := time.Duration(0); done < d; done += step {
		if _, ok, err := l.opts.store.Reserve(context.Background(), l.opts.key, wrote, burst, interval, burst, infDuration); err != nil || !ok {
			return // the hold stands; a store that fails decides nothing
		}
	}
}
