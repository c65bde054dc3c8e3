// Package clockwait waits on an injected clock in a select with a context,
// the one way wapace's packages block.
package clockwait

import (
	"context"
	"errors"
	"time"

	"github.com/benbjohnson/clock"
)

// ContextSleeper is implemented by clocks that wait for themselves, such as
// a discrete-event simulation clock that jumps to the next wake-up once
// every goroutine it runs is waiting. Sleep uses it instead of a Timer.
type ContextSleeper interface {
	SleepContext(ctx context.Context, d time.Duration) error
}

// Sleep waits d on c, or until ctx is done, whichever comes first. It
// returns nil after the full wait and ctx's error otherwise; the timer is
// stopped either way. A d of zero or less returns at once (nil, unless ctx
// is already done).
func Sleep(ctx context.Context, c clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if s, ok := c.(ContextSleeper); ok {
		return s.SleepContext(ctx, d)
	}
	t := c.Timer(d)
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// Until waits on c until the instant at, or until ctx is done.
func Until(ctx context.Context, c clock.Clock, at time.Time) error {
	return Sleep(ctx, c, at.Sub(c.Now()))
}

// ErrPastDeadline is returned by Reserved when the wait would end after the
// context's deadline.
var ErrPastDeadline = errors.New("clockwait: wait would end after the context's deadline")

// Reserved waits out a reservation made at now that may act after delay.
// When that is after ctx's deadline it gives the reservation back with
// cancel(now) and returns ErrPastDeadline at once, without waiting; when
// ctx ends during the wait it gives it back with cancel at the clock's
// current time and returns ctx's error.
func Reserved(ctx context.Context, c clock.Clock, now time.Time, delay time.Duration, cancel func(time.Time)) error {
	if dl, ok := ctx.Deadline(); ok && now.Add(delay).After(dl) {
		cancel(now)
		return ErrPastDeadline
	}
	if err := Sleep(ctx, c, delay); err != nil {
		cancel(c.Now())
		return err
	}
	return nil
}

// UntilOr waits on c until the instant at, until signal is closed, or until
// ctx is done. It reports whether signal ended the wait (then err is nil).
// A nil signal is never closed: UntilOr is then Until. A signal found
// closed when the instant comes counts too. On a clock that waits for
// itself (ContextSleeper) the wait ends through a context that a
// goroutine cancels when signal closes; such a clock may jump ahead before
// that goroutine runs, so the wait can end at the instant instead (with
// the signal reported if it is closed by then).
func UntilOr(ctx context.Context, c clock.Clock, at time.Time, signal <-chan struct{}) (bool, error) {
	if signal == nil {
		return false, Until(ctx, c, at)
	}
	select {
	case <-signal:
		return true, nil
	default:
	}
	d := at.Sub(c.Now())
	if d <= 0 {
		return false, ctx.Err()
	}
	if s, ok := c.(ContextSleeper); ok {
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-signal:
				cancel()
			case <-sctx.Done():
			}
		}()
		err := s.SleepContext(sctx, d)
		if err != nil && ctx.Err() == nil {
			return true, nil // signal closed
		}
		if err == nil {
			return closed(signal), nil
		}
		return false, err
	}
	t := c.Timer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return closed(signal), nil // (closed as the timer fired: it counts)
	case <-signal:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// closed reports whether ch is closed (or has a value ready).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
