package throughput

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/internal/clockwait"
	"golang.org/x/time/rate"
)

// timeline keeps the instants a rate.Limiter is asked at in order, and a
// hold before which nothing is admitted. It is safe for concurrent use.
//
// rate.Limiter's explicit-time methods assume that time never goes back:
// asked at an instant before the last one, it moves its notion of "last"
// back and later credits the same refill twice (CancelAt does the same), so
// a bucket fed out-of-order instants can admit more than its rate. Every
// call therefore goes through at, which never returns an instant before
// one it returned already.
type timeline struct {
	hold atomic.Int64 // unix ns; nothing is admitted before it
	last atomic.Int64 // unix ns; the latest instant handed to the limiter
}

// extend moves the end of the hold to until, unless it already ends later.
func (tl *timeline) extend(until time.Time) { raise(&tl.hold, until.UnixNano()) }

func raise(v *atomic.Int64, to int64) int64 {
	for {
		cur := v.Load()
		if cur >= to || v.CompareAndSwap(cur, to) {
			return max(cur, to)
		}
	}
}

// at returns the instant to ask the limiter at for a call at t: t, or the
// end of the hold, or the latest instant already used, whichever is latest.
func (tl *timeline) at(t time.Time) time.Time {
	n := max(t.UnixNano(), tl.hold.Load())
	if m := raise(&tl.last, n); m != t.UnixNano() {
		return time.Unix(0, m)
	}
	return t
}

// held reports whether t falls inside the hold.
func (tl *timeline) held(t time.Time) bool { return tl.hold.Load() > t.UnixNano() }

// heldUntil returns the end of the hold, or the zero Time if there never
// was one.
func (tl *timeline) heldUntil() time.Time {
	if u := tl.hold.Load(); u != 0 {
		return time.Unix(0, u)
	}
	return time.Time{}
}

// reserve reserves n tokens of lim at the instant at. A reservation of more
// than lim's burst comes back not OK from lim itself.
func reserve(lim *rate.Limiter, tl *timeline, c clock.Clock, t time.Time, n int) Reservation {
	if n < 1 {
		return Reservation{}
	}
	at := tl.at(t)
	r := lim.ReserveN(at, n) // inlined: the *rate.Reservation does not escape
	if !r.OK() {
		return Reservation{}
	}
	return Reservation{r: *r, ok: true, tl: tl, clock: c, at: at, delay: r.DelayFrom(at)}
}

// waitN is WaitN for anything that reserves: reserve at now, fail at once if
// the wait cannot fit before ctx's deadline, wait on c, give back on cancel.
func waitN(ctx context.Context, c clock.Clock, n int, reserveN func(time.Time, int) Reservation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := c.Now()
	r := reserveN(now, n)
	if !r.OK() {
		return fmt.Errorf("throughput: %d at once: %w", n, ErrBurstTooLarge)
	}
	delay := r.DelayFrom(now)
	err := clockwait.Reserved(ctx, c, now, delay, r.CancelAt)
	if errors.Is(err, clockwait.ErrPastDeadline) {
		return fmt.Errorf("throughput: must wait %v: %w", delay, ErrDeadline)
	}
	return err
}

// Reservation is a Limiter's or a Budget's promise that n sends or calls
// may go at a given instant.
type Reservation struct {
	r     rate.Reservation // a copy: CancelAt acts on the limiter it points to
	tl    *timeline
	ok    bool
	clock clock.Clock
	at    time.Time     // when it was decided
	delay time.Duration // from at to the time to act
}

// OK reports whether the limiter can honour the reservation.
func (r Reservation) OK() bool { return r.ok }

// TimeToAct returns when the sends may go (zero if not OK).
func (r Reservation) TimeToAct() time.Time {
	if !r.ok {
		return time.Time{}
	}
	return r.at.Add(r.delay)
}

// DelayFrom returns how long after t the sends may go; zero means at once.
// It is [rate.InfDuration] for a reservation that is not OK.
func (r Reservation) DelayFrom(t time.Time) time.Duration {
	if !r.ok {
		return rate.InfDuration
	}
	if t.Equal(r.at) {
		return r.delay
	}
	return max(r.at.Add(r.delay).Sub(t), 0)
}

// Delay is shorthand for DelayFrom(clock.Now()).
func (r Reservation) Delay() time.Duration {
	if !r.ok {
		return rate.InfDuration
	}
	return r.DelayFrom(r.clock.Now())
}

// CancelAt gives the reservation back at t, as [rate.Reservation.CancelAt]
// does: the tokens return to the bucket unless later reservations depend on
// them or the reservation's time has passed. An instant before one the
// limiter was already asked at counts as that instant.
func (r Reservation) CancelAt(t time.Time) {
	if r.ok {
		r.r.CancelAt(r.tl.at(t))
	}
}

// Cancel is shorthand for CancelAt(clock.Now()).
func (r Reservation) Cancel() {
	if r.ok {
		r.CancelAt(r.clock.Now())
	}
}
