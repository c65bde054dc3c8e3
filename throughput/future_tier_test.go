package throughput_test

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// A claim at a future instant must not drop counts still live for callers
// at the present: with a tier of 2, A at t0 and B at t0+1h, a renewal of B
// 10 s ahead of the present p = t0+24h-5s left A counted at p, so C at p
// is a third recipient in one 24-hour window.
func TestTierFutureClaimKeepsPresentCounts(t *testing.T) {
	p := t0.Add((24 * time.Hour) - 5*time.Second)
	const a, b, c = "+237690000001", "+237690000002", "+237690000003"
	for _, tc := range []struct {
		name string
		opts func(*clock.Mock) []throughput.Option
	}{
		{"memory", func(mock *clock.Mock) []throughput.Option { return nil }},
		{"MemoryStore", func(mock *clock.Mock) []throughput.Option {
			return []throughput.Option{throughput.WithStore(throughputstore.NewMemoryStore(mock), "p")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mock := clock.NewMock()
			mock.Set(p)
			tier := throughput.NewTier(2, append(tc.opts(mock), throughput.WithClock(mock))...)
			for _, s := range []struct {
				at time.Time
				to string
			}{{t0, a}, {t0.Add(time.Hour), b}, {p.Add(10 * time.Second), b}} {
				if ok, _ := tier.Admit(s.at, s.to); !ok {
					t.Fatalf("Admit(%v, %s) refused", s.at, s.to)
				}
			}
			if got := tier.Count(p); got != 2 {
				t.Errorf("Count(p) = %d, want 2 (A and B)", got)
			}
			if ok, retryAt := tier.Admit(p, c); ok || !retryAt.Equal(t0.Add((24 * time.Hour))) {
				t.Errorf("Admit(p, C) = %v, %v; want refused until A expires at %v", ok, retryAt, t0.Add((24 * time.Hour)))
			}
			// At p+10s A has expired: each decision counts at its own instant.
			if got := tier.Count(p.Add(10 * time.Second)); got != 1 {
				t.Errorf("Count(p+10s) = %d, want 1", got)
			}
			if ok, _ := tier.Admit(p.Add(10*time.Second), c); !ok {
				t.Error("Admit(p+10s, C) refused; A has expired by then")
			}
			if ok, _ := tier.Admit(p, a); !ok {
				t.Error("Admit(p, A) refused; A is still counted at p")
			}
		})
	}
}

// farClock is a clock far ahead of every instant a benchmark asks at, so
// that the present is the latest instant asked whatever the real date.
func farClock() *clock.Mock {
	m := clock.NewMock()
	m.Set(t0.AddDate(100, 0, 0))
	return m
}
