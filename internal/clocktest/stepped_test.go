package clocktest_test

import (
	"testing"
	"time"

	"github.com/wapace/wapace/internal/clocktest"
)

func TestWallSteppedMovesOnlyTheWallReading(t *testing.T) {
	now := time.Now()
	for _, d := range []time.Duration{0, time.Second, -time.Second, 90 * time.Minute, -36 * time.Hour, 1500 * time.Millisecond} {
		s := clocktest.WallStepped(now, d)
		if got := s.Round(0).Sub(now.Round(0)); got != d {
			t.Errorf("step %v: the wall reading moved %v", d, got)
		}
		if got := s.Sub(now); got != 0 {
			t.Errorf("step %v: the monotonic reading moved %v", d, got)
		}
		if s == s.Round(0) {
			t.Errorf("step %v: the monotonic reading was lost", d)
		}
		if s.Location() != now.Location() {
			t.Errorf("step %v: location %v, want %v", d, s.Location(), now.Location())
		}
	}
	wall := time.Date(2026, 12, 3, 5, 0, 0, 0, time.UTC)
	if got := clocktest.WallStepped(wall, time.Second); !got.Equal(wall.Add(time.Second)) {
		t.Errorf("a Time without a monotonic reading: %v", got)
	}
}

func TestSteppedClock(t *testing.T) {
	c := clocktest.NewStepped()
	a := c.Now()
	c.Step(10 * time.Second)
	b := c.Now()
	if d := b.Round(0).Sub(a.Round(0)); d < 10*time.Second || d > 11*time.Second {
		t.Errorf("the wall moved %v over a step of 10s", d)
	}
	if d := b.Sub(a); d < 0 || d > time.Second {
		t.Errorf("the monotonic clock moved %v", d)
	}
	if d := c.Since(a); d < 0 || d > time.Second {
		t.Errorf("Since = %v", d)
	}
}

func TestWatchSeesNoStallOrStepOnAQuietRun(t *testing.T) {
	watch := clocktest.Watch(t)
	time.Sleep(100 * time.Millisecond)
	stall, step := watch()
	if stall <= 0 || stall > time.Second {
		t.Errorf("longest gap %v over 100 ms of sleep", stall)
	}
	if step < -50*time.Millisecond || step > 50*time.Millisecond {
		t.Errorf("a step of %v", step)
	}
	if s2, st2 := watch(); s2 != stall || st2 != step {
		t.Errorf("a second call gave %v, %v; the first %v, %v", s2, st2, stall, step)
	}
}
