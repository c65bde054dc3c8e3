package simclock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/internal/clockwait"
	"github.com/wapace/wapace/simclock"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestJumpsWhenAllWait(t *testing.T) {
	c := simclock.New(start)
	var mu sync.Mutex
	var woke []time.Duration
	c.Run(func() {
		for i := 1; i <= 3; i++ {
			c.Go(func() {
				for range 2 {
					if err := clockwait.Sleep(t.Context(), c, time.Duration(i)*time.Hour); err != nil {
						t.Error(err)
					}
					mu.Lock()
					woke = append(woke, c.Since(start))
					mu.Unlock()
				}
			})
		}
	})
	want := map[time.Duration]int{time.Hour: 1, 2 * time.Hour: 2, 3 * time.Hour: 1, 4 * time.Hour: 1, 6 * time.Hour: 1}
	got := map[time.Duration]int{}
	for _, d := range woke {
		got[d]++
	}
	if len(got) != len(want) {
		t.Fatalf("woke at %v", woke)
	}
	for d, n := range want {
		if got[d] != n {
			t.Errorf("woke %d times at +%v, want %d (all: %v)", got[d], d, n, woke)
		}
	}
	if c.Since(start) != 6*time.Hour {
		t.Errorf("ended at +%v", c.Since(start))
	}
}

func TestCancelledSleep(t *testing.T) {
	c := simclock.New(start)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var err error
	c.Run(func() { err = c.SleepContext(ctx, time.Hour) })
	if !errors.Is(err, context.Canceled) || c.Since(start) != 0 {
		t.Errorf("err %v at +%v", err, c.Since(start))
	}
}
