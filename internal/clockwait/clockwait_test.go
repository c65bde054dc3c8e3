package clockwait_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/internal/clockwait"
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
