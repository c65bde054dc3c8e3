package instant_test

import (
	"math"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/internal/clocktest"
	"github.com/wapace/wapace/internal/instant"
)

// On the real clock, a step of the wall clock moves no instant: the
// nanoseconds are the monotonic clock's.
func TestAStepOfTheWallClockMovesNoInstant(t *testing.T) {
	sc := instant.Of(time.Now())
	if !sc.Monotonic() {
		t.Fatal("the real clock's Scale is not monotonic")
	}
	now := time.Now()
	base := sc.Nanos(now)
	for _, d := range []time.Duration{time.Second, -time.Second, 10 * time.Second, -time.Hour, 25 * time.Hour} {
		stepped := clocktest.WallStepped(now, d)
		if got := sc.Nanos(stepped); got != base {
			t.Errorf("a step of %v moved the instant by %v", d, time.Duration(got-base))
		}
		// Times made from the nanoseconds carry the monotonic reading:
		// compared with the stepped clock's own readings, they are where
		// they were.
		later := sc.Time(base + int64(time.Second))
		if got := later.Sub(stepped); got != time.Second {
			t.Errorf("after a step of %v, an instant a second on is %v away", d, got)
		}
	}
	// The wall clock's nanoseconds, while no step happened.
	if got := time.Duration(base - now.UnixNano()); got < -time.Millisecond || got > time.Millisecond {
		t.Errorf("Nanos is %v from UnixNano without a step", got)
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
		// Instants without a monotonic reading are their wall reading,
		// on every Scale.
		for _, at := range []time.Time{wall, mock.Now(), time.Unix(0, 0)} {
			ns := tc.sc.Nanos(at)
			if ns != at.UnixNano() {
				t.Errorf("%s: Nanos(%v) = %d, want UnixNano %d", tc.name, at, ns, at.UnixNano())
			}
			if back := tc.sc.Time(ns); !back.Equal(at) || back.UnixNano() != ns {
				t.Errorf("%s: Time(Nanos(%v)) = %v", tc.name, at, back)
			}
		}
		now := time.Now()
		if back := tc.sc.Time(tc.sc.Nanos(now)); !back.Equal(now) {
			t.Errorf("%s: Time(Nanos(now)) = %v, want %v", tc.name, back, now)
		}
		// The ends of the range stay at the ends.
		for _, ns := range []int64{math.MaxInt64, math.MinInt64} {
			if got := tc.sc.Time(ns); tc.mono && (ns > 0) != got.After(now) {
				t.Errorf("%s: Time(%d) = %v", tc.name, ns, got)
			}
		}
	}
	// Two monotonic Scales agree to the nanosecond.
	a, b := instant.Of(time.Now()), instant.Of(time.Now())
	if ta, tb := a.Time(wall.UnixNano()), b.Time(wall.UnixNano()); !ta.Equal(tb) {
		t.Errorf("two Scales disagree: %v and %v", ta, tb)
	}
}
