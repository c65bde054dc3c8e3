package throughput

import (
	"slices"
	"time"
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
// PerSecond() sends whose lateness differs by less than margin + T. The
// tolerance is therefore max(q, T/2), q a recent high quantile of the
// lateness seen at the check (so that few sends take a new slot), and the
// margin is max(0, tolerance + w - T/2), w a recent high quantile of the
// time from the check to the bytes being out: half an interval is left for
// what the sender cannot see (the network, the far end). On an idle
// machine both quantiles are well below T/2, the margin is 0 and the rate
// is the bare rule's; under load the margin follows what is observed, up
// to maxMargin.
//
// The quantiles are per Limiter (per process), over the last lateSamples
// observations, recomputed every lateEvery. Limiters sharing a Store pace
// one bucket, each with its own margin: processes on one machine see the
// same lateness and so agree; a process much later than the others should
// be given a fixed margin with WithHeadroom.
const (
	lateSamples = 256
	lateEvery   = 32
	lateRank    = lateSamples - 1 - lateSamples/100 // the 99th percentile
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

// quantiles returns the high quantile of each kind of lateness.
func (r *lateness) quantiles() (check, write time.Duration) {
	q := func(s []int64) time.Duration {
		c := slices.Clone(s[:r.n])
		slices.Sort(c)
		return time.Duration(c[r.n*lateRank/lateSamples])
	}
	return q(r.check[:]), q(r.write[:])
}

// paceFigures returns the tolerance and margin for an interval T given the
// high quantiles of check and write lateness (see the comment above).
func paceFigures(interval, check, write time.Duration) (tolerance, margin time.Duration) {
	half := interval / 2
	tolerance = max(check, half)
	margin = max(tolerance+write-half, 0)
	margin = min((margin+marginStep-1)/marginStep*marginStep, maxMargin)
	return min(tolerance, maxMargin+half), margin
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
	check, w := l.late.quantiles()
	tol, margin := paceFigures(l.interval0, check, w)
	l.tolerance.Store(int64(tol))
	if margin != l.margin {
		l.margin = margin
		l.applyLocked(checked.UnixNano())
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
