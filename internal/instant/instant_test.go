package instant_test

import (
	"math"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/internal/clocktest"
	"github.com/wapace/wapace/internal/instant"
)

// On the real clock, a step of the wall clock moves no instant kept in
// nanoseconds, and every time given or returned keeps its meaning on the
// clock as it reads after the step.
func TestAStepOfTheWallClockMovesNoInstant(t *testing.T) {
	for _, d := range []time.Duration{time.Second, -time.Second, 10 * time.Second, -time.Hour, 25 * time.Hour} {
		clk := clocktest.NewStepped()
		sc := instant.Of(clk.Now())
		if !sc.Monotonic() {
			t.Fatal("the real clock's Scale is not monotonic")
		}
		now := clk.Now()
		due := sc.Nanos(now) + int64(time.Second) // a second from now
		clk.Step(d)
		after := clk.Now()
		if got := time.Duration(due - sc.Nanos(after)); got <= 900*time.Millisecond || got > time.Second {
			t.Errorf("step %v: the instant a second away is %v away", d, got)
		}
		at := sc.Time(due)
		// Against the clock's readings (monotonic) and against its wall
		// reading alone (a database's, a Store's), the same instant.
		if got := at.Sub(after); got <= 900*time.Millisecond || got > time.Second {
			t.Errorf("step %v: Time is %v from the clock", d, got)
		}
		if got := at.Round(0).Sub(after.Round(0)); got <= 900*time.Millisecond || got > time.Second {
			t.Errorf("step %v: Time's wall reading is %v from the clock's", d, got)
		}
		// An instant without a monotonic reading, read off the stepped
		// wall clock, is where the clock says.
		wall := time.Unix(0, after.UnixNano()+int64(time.Second))
		if got := time.Duration(sc.Nanos(wall) - sc.Nanos(after)); got < time.Second-time.Millisecond || got > time.Second+time.Millisecond {
			t.Errorf("step %v: a wall instant a second on is %v on", d, got)
		}
	}
}

func TestScaleRoundTrips(t *testing.T) {
	wall := time.Date(2026, 12, 3, 5, 0, 0, 123, time.UTC)
	mock := clock.NewMock()
	for _, tc := range []struct {
		name string
		sc   instant.Scale
		mono bool
	}{
		{"zero", instant.Scale{}, false},
		{"a simulated clock", instant.Of(mock.Now()), false},
		{"the real clock", instant.Of(time.Now()), true},
	} {
		if tc.sc.Monotonic() != tc.mono {
			t.Errorf("%s: Monotonic() = %v", tc.name, tc.sc.Monotonic())
		}
		// Without a step, instants without a monotonic reading are their
		// wall reading (to the microsecond on the real clock, whose
		// readings of the two clocks are not taken at one instant).
		for _, at := range []time.Time{wall, mock.Now(), time.Unix(0, 0)} {
			ns := tc.sc.Nanos(at)
			if d := ns - at.UnixNano(); d < -int64(time.Microsecond) || d > int64(time.Microsecond) {
				t.Errorf("%s: Nanos(%v) = %d, want UnixNano %d", tc.name, at, ns, at.UnixNano())
			}
			if back := tc.sc.Time(ns); back.Sub(at).Abs() > time.Microsecond {
				t.Errorf("%s: Time(Nanos(%v)) = %v", tc.name, at, back)
			}
		}
		now := time.Now()
		if back := tc.sc.Time(tc.sc.Nanos(now)); back.Sub(now).Abs() > time.Microsecond {
			t.Errorf("%s: Time(Nanos(now)) = %v, want %v", tc.name, back, now)
		}
		// The ends of the range stay at the ends.
		for _, ns := range []int64{math.MaxInt64, math.MinInt64} {
			if got := tc.sc.Time(ns); (ns > 0) != got.After(now) {
				t.Errorf("%s: Time(%d) = %v", tc.name, ns, got)
			}
		}
	}
	// Two monotonic Scales agree: Equal compares the monotonic readings.
	a, b := instant.Of(time.Now()), instant.Of(time.Now())
	if ns := a.Nanos(time.Now()); !a.Time(ns).Equal(b.Time(ns)) {
		t.Errorf("two Scales disagree: %v and %v", a.Time(ns), b.Time(ns))
	}
}
