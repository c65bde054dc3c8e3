package throughput

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/internal/clockwait"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// infDuration is the delay of a reservation that is not OK: the largest
// Duration, as rate.infDuration and pairlimit.infDuration.
const infDuration = time.Duration(math.MaxInt64)

// waitN is WaitN for anything that reserves: reserve at now within ctx's
// deadline (reserving nothing if it cannot fit), wait on c, give back on
// cancel. A reservation a cut made stale (see Reservation.stale) is given
// back and made again at the new figure.
func waitN(ctx context.Context, c clock.Clock, n int, reserveN func(t time.Time, n int, maxWait time.Duration) Reservation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := c.Now()
	reserve := func() (Reservation, error) {
		maxWait := infDuration
		if d, ok := ctx.Deadline(); ok {
			maxWait = max(d.Sub(now), 0)
		}
		r := reserveN(now, n, maxWait)
		switch {
		case r.err == errTooLate:
			return r, fmt.Errorf("throughput: must wait %v: %w", time.Duration(r.tk.Act-r.ns(now)), backoff.ErrDeadline)
		case errors.Is(r.err, ErrBurstTooLarge):
			return r, fmt.Errorf("throughput: %d at once: %w", n, ErrBurstTooLarge)
		}
		return r, r.err
	}
	r, err := reserve()
	if err != nil {
		return err
	}
	for {
		moved := r.moved() // before the instant: see moved
		if r.stale() {
			r.CancelAt(now)
			if r, err = reserve(); err != nil {
				return err
			}
			continue
		}
		delay := r.DelayFrom(now)
		if d, ok := ctx.Deadline(); ok && now.Add(delay).After(d) {
			r.CancelAt(now)
			return fmt.Errorf("throughput: must wait %v: %w", delay, backoff.ErrDeadline)
		}
		again, err := clockwait.UntilOr(ctx, c, now.Add(delay), moved)
		if err != nil {
			r.CancelAt(c.Now())
			return err
		}
		if !again {
			return nil
		}
		now = c.Now() // SetMPSAt moved it: wait for its new instant
	}
}

// Reservation is a Limiter's or a Budget's promise that n sends or calls
// may go at a given instant. It is a small value; cancelling it twice is
// harmless. The zero Reservation is not OK.
type Reservation struct {
	ok      bool
	err     error
	b       *memBucket
	store   throughputstore.Store
	key     string
	clock   clock.Clock
	tk      throughputstore.BucketTicket
	at      int64  // when it was asked
	gen     uint64 // b's moves when it was made (see moved)
	cut     uint64 // b's cuts when it was asked, with a Store (see stale)
	movable bool   // SetMPSAt may move it (withMovingReservations, no Store)
}

// ns is t in the nanoseconds of r's bucket (see memBucket.sc).
func (r Reservation) ns(t time.Time) int64 {
	if r.b == nil {
		return t.UnixNano()
	}
	return r.b.sc.Nanos(t)
}

// time is the instant ns nanoseconds on the scale of r's bucket.
func (r Reservation) time(ns int64) time.Time {
	if r.b == nil {
		return time.Unix(0, ns)
	}
	return r.b.sc.Time(ns)
}

// OK reports whether the limiter can honour the reservation.
func (r Reservation) OK() bool { return r.ok }

// Err returns nil for an OK reservation and otherwise why it is not:
// ErrBurstTooLarge, ErrInvalidCount, or a error matching ErrStore
// (nothing was reserved: do not send). It is nil for the zero Reservation.
func (r Reservation) Err() error {
	if r.err == errTooLate {
		return backoff.ErrDeadline
	}
	return r.err
}

// TimeToAct returns when the sends may go (zero if not OK): the instant
// reserved, as [Limiter.SetMPSAt] has moved it since (only a cloudapi
// Client's limiters move their reservations). On the real clock without a
// Store it carries a monotonic reading, as time.Now's do: a Limiter keeps
// its instants on the monotonic clock, which a step of the system's wall
// clock does not move (compare instants with Equal, Before and After,
// not ==). With a Store the instants are the wall clock's, the one clock
// processes share.
func (r Reservation) TimeToAct() time.Time {
	if !r.ok {
		return time.Time{}
	}
	return r.time(r.act())
}

// act is the instant of r, moved.
func (r Reservation) act() int64 {
	if r.store != nil {
		return r.tk.Act
	}
	return r.b.movedTicket(r.tk, r.gen).Act
}

// moved returns a channel closed at the next move of the Limiter's
// waiting reservations (see withMovingReservations and internal/slotmoves),
// or, for one kept in a Store, at the next cut of the Limiter's figure
// (see stale); nil for a reservation that cannot move: one not OK, or one
// of a Limiter that does not move its reservations. A holder reads it
// before TimeToAct and stale, so that no move falls between them unseen.
func (r Reservation) moved() <-chan struct{} {
	if !r.ok || (!r.movable && r.store == nil) || r.b == nil {
		return nil
	}
	return r.b.nextMove()
}

// stale reports whether r is kept in a Store and the Limiter's figure was
// cut (SetMPSAt to a lower one) since it was asked: a Store cannot move
// the tickets it handed out, so its holder gives it back and reserves
// again, at the new figure (WaitN does; so does a cloudapi Client,
// through internal/slotmoves). A reservation asked while the cut was
// being made may be stale too: reserving again is always safe.
func (r Reservation) stale() bool {
	return r.ok && r.store != nil && r.b != nil && r.b.cuts.Load() != r.cut
}

// DelayFrom returns how long after t the sends may go; zero means at once.
// It is the largest Duration (math.MaxInt64, as pairlimit.InfDuration)
// for a reservation that is not OK.
func (r Reservation) DelayFrom(t time.Time) time.Duration {
	if !r.ok {
		return infDuration
	}
	return time.Duration(max(r.act()-r.ns(t), 0))
}

// Delay is shorthand for DelayFrom(clock.Now()).
func (r Reservation) Delay() time.Duration {
	if !r.ok {
		return infDuration
	}
	return r.DelayFrom(r.clock.Now())
}

// CancelAt gives the reservation back at t ([throughputstore.BucketState.Cancel]): when
// its time had not come by t and no later reservation stands on it (or
// those were given back first), the bucket is as if it had not been made.
// Otherwise its tokens stay spent, which errs on the safe side.
func (r Reservation) CancelAt(t time.Time) {
	if !r.ok {
		return
	}
	if r.store == nil {
		r.b.cancel(r.ns(t), r.tk, r.gen)
		return
	}
	_, _ = r.store.Cancel(context.Background(), r.key, t, r.tk)
}

// Cancel is shorthand for CancelAt(clock.Now()).
func (r Reservation) Cancel() {
	if r.ok {
		r.CancelAt(r.clock.Now())
	}
}
