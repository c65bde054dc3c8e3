package clockwait_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/internal/clockwait"
	"github.com/wapace/wapace/simclock"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clock.New()
		start := time.Now()
		if err := clockwait.Sleep(t.Context(), c, 5*time.Second); err != nil || time.Since(start) != 5*time.Second {
			t.Fatalf("Sleep = %v after %v", err, time.Since(start))
		}
		if err := clockwait.Until(t.Context(), c, start); err != nil || time.Since(start) != 5*time.Second {
			t.Fatalf("Until(past) = %v after %v", err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		if err := clockwait.Sleep(ctx, c, time.Minute); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 7*time.Second {
			t.Fatalf("Sleep(cancelled) = %v after %v", err, time.Since(start))
		}
		if err := clockwait.Sleep(ctx, c, 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sleep(0, done ctx) = %v", err)
		}
	})
}

func TestReserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clock.New()
		var cancelled []time.Duration
		start := time.Now()
		cancel := func(at time.Time) { cancelled = append(cancelled, at.Sub(start)) }
		if err := clockwait.Reserved(t.Context(), c, start, 3*time.Second, cancel); err != nil || len(cancelled) != 0 {
			t.Fatalf("Reserved = %v, cancelled %v", err, cancelled)
		}
		ctx, stop := context.WithTimeout(t.Context(), time.Second)
		defer stop()
		now := time.Now()
		if err := clockwait.Reserved(ctx, c, now, 2*time.Second, cancel); !errors.Is(err, clockwait.ErrPastDeadline) || time.Since(now) != 0 {
			t.Fatalf("past deadline: %v after %v", err, time.Since(now))
		}
		ctx2, stop2 := context.WithCancel(t.Context())
		go func() { time.Sleep(time.Second); stop2() }()
		if err := clockwait.Reserved(ctx2, c, time.Now(), time.Hour, cancel); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v", err)
		}
		want := []time.Duration{3 * time.Second, 4 * time.Second}
		if len(cancelled) != 2 || cancelled[0] != want[0] || cancelled[1] != want[1] {
			t.Errorf("gave back at %v, want %v", cancelled, want)
		}
	})
}

func TestUntilOr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clock.New()
		start := time.Now()
		if moved, err := clockwait.UntilOr(t.Context(), c, start.Add(time.Second), nil); moved || err != nil || time.Since(start) != time.Second {
			t.Fatalf("nil signal: %v, %v after %v", moved, err, time.Since(start))
		}
		signal := make(chan struct{})
		go func() { time.Sleep(time.Second); close(signal) }()
		now := time.Now()
		if moved, err := clockwait.UntilOr(t.Context(), c, now.Add(time.Hour), signal); !moved || err != nil || time.Since(now) != time.Second {
			t.Fatalf("signal: %v, %v after %v", moved, err, time.Since(now))
		}
		if moved, err := clockwait.UntilOr(t.Context(), c, time.Now().Add(time.Hour), signal); !moved || err != nil {
			t.Fatalf("closed signal: %v, %v", moved, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if moved, err := clockwait.UntilOr(ctx, c, time.Now().Add(time.Hour), make(chan struct{})); moved || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ctx ended: %v, %v", moved, err)
		}
	})
}

// TestUntilOrSimulated: on a clock that waits for itself, a signal closed
// by a tracked goroutine ends the wait, reported, by the time the
// instant comes.
func TestUntilOrSimulated(t *testing.T) {
	start := time.Unix(0, 0)
	c := simclock.New(start)
	c.Run(func() {
		signal := make(chan struct{})
		c.Go(func() { c.Sleep(time.Second); close(signal) })
		moved, err := clockwait.UntilOr(context.Background(), c, start.Add(time.Hour), signal)
		if !moved || err != nil {
			t.Errorf("UntilOr = %v, %v at +%v", moved, err, c.Now().Sub(start))
		}
	})
}
