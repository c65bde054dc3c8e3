package backoff_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/backoff"
	"pgregory.net/rapid"
)

func delays(s backoff.Schedule, retries ...int) []time.Duration {
	out := make([]time.Duration, len(retries))
	for i, r := range retries {
		out[i] = s.Delay(r)
	}
	return out
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	s := time.Second
	tests := []struct {
		name    string
		s       backoff.Schedule
		retries []int
		want    []time.Duration
	}{
		{"meta 4^X", backoff.Meta, []int{0, 1, 2, 3, 4}, []time.Duration{1 * s, 4 * s, 16 * s, 64 * s, 256 * s}},
		{"meta capped", backoff.Meta, []int{5, 6, 30, 1000, math.MaxInt}, []time.Duration{256 * s, 256 * s, 256 * s, 256 * s, 256 * s}},
		{"meta negative retry", backoff.Meta, []int{-1, math.MinInt}, []time.Duration{s, s}},
		{"meta uncapped", backoff.Exponential{Initial: s, Factor: 4}, []int{5, 6}, []time.Duration{1024 * s, 4096 * s}},
		{"doubling", usualDoubling, []int{0, 1, 2, 3, 4, 5, 6, 100}, []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 60 * s, 60 * s}},
		{"zero value doubles from 1s", backoff.Exponential{}, []int{0, 1, 2, 3}, []time.Duration{s, 2 * s, 4 * s, 8 * s}},
		{"zero value saturates", backoff.Exponential{}, []int{62, 63, 1000}, []time.Duration{math.MaxInt64, math.MaxInt64, math.MaxInt64}},
		{"factor below 1 means 2", backoff.Exponential{Initial: s, Factor: 0.5}, []int{3}, []time.Duration{8 * s}},
		{"NaN factor means 2", backoff.Exponential{Initial: s, Factor: math.NaN()}, []int{3}, []time.Duration{8 * s}},
		{"huge factor", backoff.Exponential{Initial: s, Factor: 1e300, Max: time.Hour}, []int{0, 1, 2}, []time.Duration{s, time.Hour, time.Hour}},
		{"fractional factor", backoff.Exponential{Initial: 100 * time.Millisecond, Factor: 1.5}, []int{0, 1, 2}, []time.Duration{100 * time.Millisecond, 150 * time.Millisecond, 225 * time.Millisecond}},
		{"initial above max", backoff.Exponential{Initial: time.Hour, Max: time.Minute}, []int{0}, []time.Duration{time.Minute}},
		{"constant", backoff.Constant(6 * s), []int{0, 7}, []time.Duration{6 * s, 6 * s}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, delays(tt.s, tt.retries...)); diff != "" {
				t.Errorf("delays (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMetaCumulativeWaits(t *testing.T) {
	t.Parallel()
	var meta, doubling time.Duration
	for r := range 4 {
		meta += backoff.Meta.Delay(r)
		doubling += usualDoubling.Delay(r)
	}
	if meta != 85*time.Second || doubling != 15*time.Second {
		t.Errorf("after four failures: meta %v, doubling %v; want 85s and 15s", meta, doubling)
	}
	// The five capped waits outlast the longest debt a pair can owe (45 x 6 s).
	if total := meta + backoff.Meta.Delay(4); total <= 45*6*time.Second {
		t.Errorf("five Meta waits = %v, not beyond a full burst's debt", total)
	}
}

func TestJitterIsBoundedAndSeeded(t *testing.T) {
	t.Parallel()
	for _, j := range []backoff.Jitter{backoff.FullJitter, backoff.EqualJitter} {
		a := backoff.Exponential{Initial: time.Second, Factor: 4, Max: 256 * time.Second, Jitter: j, Rand: rand.NewPCG(1, 2)}
		b := a
		b.Rand = rand.NewPCG(1, 2)
		for r := range 50 {
			d, base := a.Delay(r), backoff.Meta.Delay(r)
			lo := time.Duration(0)
			if j == backoff.EqualJitter {
				lo = base / 2
			}
			if d < lo || d >= base {
				t.Fatalf("jitter %d retry %d: %v not in [%v, %v)", j, r, d, lo, base)
			}
			if d2 := b.Delay(r); d2 != d {
				t.Fatalf("same seed gave %v and %v", d, d2)
			}
		}
	}
	// The global source is used when Rand is nil.
	s := backoff.Exponential{Jitter: backoff.FullJitter}
	if d := s.Delay(3); d < 0 || d >= 8*time.Second {
		t.Errorf("FullJitter with global source: %v", d)
	}
}

func TestExponentialProperties(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		e := backoff.Exponential{
			Initial: time.Duration(rapid.Int64Range(-10, int64(time.Hour)).Draw(t, "initial")),
			Factor:  rapid.Float64Range(-1, 100).Draw(t, "factor"),
			Max:     time.Duration(rapid.Int64Range(-1, int64(24*time.Hour)).Draw(t, "max")),
		}
		prev := time.Duration(0)
		for r := range rapid.IntRange(1, 200).Draw(t, "retries") {
			d := e.Delay(r)
			if d <= 0 {
				t.Fatalf("Delay(%d) = %v, want positive", r, d)
			}
			if e.Max > 0 && d > e.Max {
				t.Fatalf("Delay(%d) = %v above Max %v", r, d, e.Max)
			}
			if d < prev {
				t.Fatalf("Delay(%d) = %v below Delay(%d) = %v", r, d, r-1, prev)
			}
			prev = d
		}
	})
}

// usualDoubling is the doubling schedule most HTTP clients and job queues
// use, from 1 s capped at a minute, to compare with Meta's.
var usualDoubling = backoff.Exponential{Initial: time.Second, Factor: 2, Max: time.Minute}
