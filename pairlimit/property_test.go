package pairlimit_test

import (
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
	"pgregory.net/rapid"
)

// TestPropertySchedulesNeverRefused: whatever interleaving of reservations,
// give-backs and recorded 131056s across a few pairs, every pair's sends,
// replayed through Meta's model, are accepted.
func TestPropertySchedulesNeverRefused(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		margin := time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "margin"))
		lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(margin))
		pairs := []pairlimit.Pair{}
		for _, to := range []string{"237690000001", "237690000002", "4915112345678"} {
			p, _ := pairlimit.NewPair("1001", to)
			pairs = append(pairs, p)
		}
		type res struct {
			r         pairlimit.Reservation
			pair      int
			n         int
			cancelled bool
		}
		var all []*res
		now := t0
		steps := rapid.IntRange(1, 120).Draw(t, "steps")
		for range steps {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(20*time.Second)).Draw(t, "advance")))
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3, 4, 5:
				i := rapid.IntRange(0, len(pairs)-1).Draw(t, "pair")
				n := rapid.IntRange(1, 45).Draw(t, "n")
				if rapid.Bool().Draw(t, "small") {
					n = rapid.IntRange(1, 3).Draw(t, "n-small")
				}
				r := lim.ReserveN(now, pairs[i], n)
				if !r.OK() {
					t.Fatalf("reservation of %d refused: %v", n, r.Err())
				}
				all = append(all, &res{r: r, pair: i, n: n})
			case 6, 7:
				if len(all) > 0 {
					c := all[rapid.IntRange(0, len(all)-1).Draw(t, "cancel")]
					// A reservation whose time has passed was sent; cancel
					// only those still pending, as a caller would.
					if !c.cancelled && !c.r.TimeToAct().Before(now) {
						c.r.CancelAt(now)
						c.cancelled = true
					}
				}
			default:
				lim.Refused(now, pairs[rapid.IntRange(0, len(pairs)-1).Draw(t, "refused")])
			}
		}
		for i := range pairs {
			var sends []time.Time
			for _, r := range all {
				if r.pair == i && !r.cancelled {
					for range r.n {
						sends = append(sends, r.r.TimeToAct())
					}
				}
			}
			for k, v := range pairlimit.Replay(pairlimit.Meta, sends) {
				if !v.Accepted {
					t.Fatalf("pair %d: send %d at %v refused by the model (burst %v+%d, debt %v)",
						i, k, v.At, v.BurstStart, v.BurstLen, v.Debt)
				}
			}
		}
	})
}

// TestPropertyLoneSenderSpacing: a lone sender's 1-message reservations go
// exactly Interval + margin apart, or at once when the pair owes nothing:
// never slower.
func TestPropertyLoneSenderSpacing(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		margin := time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "margin"))
		lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(margin))
		p, _ := pairlimit.NewPair("1001", "237690000001")
		now := t0
		var prev time.Time
		for i := range rapid.IntRange(1, 100).Draw(t, "sends") {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(10*time.Second)).Draw(t, "advance")))
			got := lim.ReserveN(now, p, 1).TimeToAct()
			want := now
			if i > 0 {
				if next := prev.Add(pairlimit.Meta.Interval + margin); next.After(want) {
					want = next
				}
			}
			if !got.Equal(want) {
				t.Fatalf("send %d asked at %v acts at %v, want %v", i, now, got, want)
			}
			prev = got
		}
	})
}
