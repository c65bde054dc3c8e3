package throughputstore

import (
	"math"
	"time"

	"github.com/wapace/wapace/internal/sat"
)

// BucketState is a token bucket as a [Store] keeps it, in the form of a
// generic cell rate algorithm: one token per interval, up to burst at once.
// Instants are Unix nanoseconds. The zero BucketState is a full bucket with
// no hold.
type BucketState struct {
	// TAT is the theoretical arrival time: the bucket is full at TAT, and
	// holds burst - (TAT - t) / interval tokens at t.
	TAT int64
	// Hold is the end of a hold before which nothing is admitted.
	Hold int64
	// Top is the ID of the latest reservation that can be given back.
	Top uint64
	// Interval is the interval, in nanoseconds, the debt ahead of TAT is
	// counted in: that of the latest reservation (zero before any).
	Interval int64
}

// BucketTicket identifies one bucket reservation for an exact give-back.
type BucketTicket struct {
	ID, PrevTop uint64
	PrevTAT     int64
	// Act is when the reserved sends may go.
	Act int64
}

// Next returns when n tokens asked at t may be taken, changing nothing:
// with TAT first restated for interval (see [BucketState.Reserve]) and u =
// max(t, Hold), act = max(u, max(TAT, u) + n x interval - burst x
// interval).
func (s BucketState) Next(t int64, n int, interval time.Duration, burst int) int64 {
	s = s.restate(t, interval, burst)
	u := max(t, s.Hold)
	return max(u, sat.Add(max(s.TAT, u), int64(n-burst)*int64(interval)))
}

// Reserve takes n tokens asked at t. First TAT is restated for interval:
// when it is longer than Interval (a slower rate), the debt ahead of TAT is
// stretched by interval / Interval from ref = max(min(t, e), e - burst x
// Interval), e = TAT - burst x Interval being the instant the bucket was
// last empty: from t if earlier, but from at most two bursts behind TAT.
// This is done when TAT is after t (at TAT <= t the bucket is full:
// nothing changes), so that the wider slack of a slower rate never slots
// new sends among those the old rate reserved (a shorter interval keeps
// TAT). Each change to a slower interval costs up to 2 x burst x the
// difference of the intervals, so Limiters sharing a key at different
// adaptive rates slow each other down. Then act is Next(t, n,
// interval, burst), TAT becomes max(TAT, max(t, Hold)) + n x interval,
// Interval becomes interval, and the reservation, identified by id, becomes
// Top. The ticket's PrevTAT is the restated TAT.
func (s BucketState) Reserve(t int64, n int, interval time.Duration, burst int, id uint64) (BucketState, BucketTicket) {
	s = s.restate(t, interval, burst)
	s.Interval = int64(interval)
	act := s.Next(t, n, interval, burst)
	tk := BucketTicket{ID: id, PrevTop: s.Top, PrevTAT: s.TAT, Act: act}
	s.TAT = sat.Add(max(s.TAT, t, s.Hold), int64(n)*int64(interval))
	s.Top = id
	return s, tk
}

// restate counts the debt ahead of TAT in interval, as Reserve says.
func (s BucketState) restate(t int64, interval time.Duration, burst int) BucketState {
	if s.Interval <= 0 || int64(interval) <= s.Interval || s.TAT <= t {
		return s // the same rate, a faster one, or a full bucket at t
	}
	return s.stretch(t, interval, burst)
}

// stretch is restate's stretch, out of line.
func (s BucketState) stretch(t int64, interval time.Duration, burst int) BucketState {
	slack := int64(math.MaxInt64)
	if burst >= 0 && s.Interval <= math.MaxInt64/int64(max(burst, 1)) {
		slack = int64(burst) * s.Interval
	}
	// From t if earlier than the empty instant, but never from more than
	// two bursts behind TAT: a store meets slower intervals again and again
	// (Limiters sharing a key at different adaptive rates), and stretching
	// a long queue from t each time would grow it geometrically.
	e := sat.Add(s.TAT, -slack)
	ref := max(min(t, e), sat.Add(e, -slack))
	if s.TAT > ref && s.TAT-ref > 0 { // (not if it overflows)
		d := float64(s.TAT-ref) * float64(interval) / float64(s.Interval)
		s.TAT = sat.Add(ref, int64(min(d, 0x1p62)))
	}
	return s
}

// Cancel gives reservation tk back at t: when it is Top and its time had
// not come (t <= tk.Act), TAT returns to tk.PrevTAT and Top to tk.PrevTop,
// and it reports true. Otherwise (a later reservation stands on it, it was
// given back already, its time passed) it changes nothing.
func (s BucketState) Cancel(tk BucketTicket, t int64) (BucketState, bool) {
	if tk.ID == 0 || s.Top != tk.ID || t > tk.Act {
		return s, false
	}
	s.TAT, s.Top = tk.PrevTAT, tk.PrevTop
	return s, true
}

// Extend moves the end of the hold to until unless it ends later.
func (s BucketState) Extend(until int64) BucketState {
	s.Hold = max(s.Hold, until)
	return s
}

// Expired reports whether the state can be forgotten at now: the bucket is
// full again and the hold is over (with a second to spare for instants
// that arrive out of order).
func (s BucketState) Expired(now int64) bool {
	return max(s.TAT, s.Hold) <= now-int64(time.Second)
}

// TierState is a portfolio's counted recipients as a Store keeps it: each
// recipient key with the instant of its latest admitted send. A recipient
// counts while that instant is later than t - window. The zero TierState
// counts nobody and is ready to use.
type TierState struct {
	Last map[uint64]int64
}

// TierTicket identifies one admission for Release.
type TierTicket struct {
	// To is the recipient key; At the admission's instant.
	To uint64
	At int64
	// New reports whether the admission counted the recipient anew; only
	// such an admission gives a count back.
	New bool
}

// Count returns the recipients counted at t.
func (s TierState) Count(t int64, window time.Duration) int {
	n := 0
	for _, at := range s.Last {
		if at > t-int64(window) {
			n++
		}
	}
	return n
}

// Claim admits recipient to at t: a recipient counted at t is admitted for
// free and its instant becomes max(its instant, t) (New false); otherwise,
// when fewer than limit are counted, it is counted with instant t (New
// true). Otherwise it is refused with retryAt = the oldest counted instant
// + window, which is after t; with a limit of 0 or less, nothing new is
// ever admitted and retryAt is t + window. A refusal changes nothing.
// Claim makes Last when it is nil.
func (s *TierState) Claim(to uint64, t int64, limit int, window time.Duration) (tk TierTicket, ok bool, retryAt int64) {
	if s.Last == nil {
		s.Last = make(map[uint64]int64)
	}
	from := t - int64(window)
	if at, counted := s.Last[to]; counted && at > from {
		s.Last[to] = max(at, t)
		return TierTicket{To: to, At: max(at, t)}, true, 0
	}
	if limit > 0 {
		n, oldest := 0, int64(math.MaxInt64)
		for _, at := range s.Last {
			if at > from {
				n++
				oldest = min(oldest, at)
			}
		}
		if n < limit {
			s.Last[to] = t
			return TierTicket{To: to, At: t, New: true}, true, 0
		}
		return TierTicket{}, false, oldest + int64(window)
	}
	return TierTicket{}, false, sat.Add(t, int64(window))
}

// Release gives back an admission that never went out: when tk counted its
// recipient anew and no later admission renewed it, the recipient is no
// longer counted. A renewal is never given back (the recipient was counted
// already), and a second Release changes nothing.
func (s TierState) Release(tk TierTicket) bool {
	if !tk.New || s.Last[tk.To] != tk.At {
		return false
	}
	delete(s.Last, tk.To)
	return true
}
