package pairlimit_test

import (
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
	"pgregory.net/rapid"
)

// op is one planned call of the concurrent property test.
type op struct {
	kind   int           // 0-5 reserve, 6-7 cancel, 8 refused, 9 accepted
	pair   int           // index into the pairs
	n      int           // messages, for a reservation
	offset time.Duration // the instant asked, from the present: past (within pairstore.KeepAfterDue), present or future
	cancel int           // which of the goroutine's own reservations to cancel
}

type sent struct {
	pair int
	n    int
	at   time.Time // when the messages go
}

// TestPropertyConcurrentSchedulesNeverRefused: several goroutines share a
// limiter (its own memory store, or a store shared by two limiters) and
// reserve, cancel, record 131056s and acceptances at past, present and
// future instants in any interleaving, in phases between which the clock
// moves on. Instants in the past lie within pairstore.KeepAfterDue of the present:
// the documented tolerance for instants that arrive out of order. Every pair's sends, replayed through Meta's model, are accepted;
// and once every debt is repaid, ordinary traffic evicts every state.
func TestPropertyConcurrentSchedulesNeverRefused(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		clk := newFakeClock(t0)
		opts := []pairlimit.Option{pairlimit.WithClock(clk),
			pairlimit.WithMargin(time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "margin")))}
		limA := pairlimit.New(pairlimit.Meta, opts...)
		limB := limA
		if rapid.Bool().Draw(t, "shared store") {
			store := pairlimit.NewMemoryStore(clk)
			limA = pairlimit.New(pairlimit.Meta, append(opts, pairlimit.WithStore(store))...)
			limB = pairlimit.New(pairlimit.Meta, append(opts, pairlimit.WithStore(wrapped{store}))...)
		}
		var pairs []pairlimit.Pair
		for _, to := range []string{"237690000001", "237690000002", "CO.1949266959121697", "4915112345678"} {
			p, err := pairlimit.NewPair("1001", to)
			if err != nil {
				t.Fatal(err)
			}
			pairs = append(pairs, p)
		}
		var log []sent
		workers := rapid.IntRange(2, 6).Draw(t, "goroutines")
		for phase := range rapid.IntRange(1, 4).Draw(t, "phases") {
			_ = phase
			plans := make([][]op, workers)
			for w := range plans {
				for range rapid.IntRange(1, 25).Draw(t, "ops") {
					o := op{
						kind:   rapid.IntRange(0, 9).Draw(t, "kind"),
						pair:   rapid.IntRange(0, len(pairs)-1).Draw(t, "pair"),
						n:      rapid.SampledFrom([]int{1, 1, 2, 3, 45}).Draw(t, "n"),
						offset: time.Duration(rapid.Int64Range(-int64(pairstore.KeepAfterDue), int64(60*time.Second)).Draw(t, "offset")),
						cancel: rapid.IntRange(0, 30).Draw(t, "cancel"),
					}
					plans[w] = append(plans[w], o)
				}
			}
			present := clk.Now()
			var (
				mu sync.Mutex
				wg sync.WaitGroup
			)
			for w, plan := range plans {
				lim := limA
				if w%2 == 1 {
					lim = limB
				}
				wg.Go(func() {
					type mine struct {
						r         pairlimit.Reservation
						pair      int
						n         int
						cancelled bool
					}
					var rs []*mine
					for _, o := range plan {
						at := present.Add(o.offset)
						switch {
						case o.kind <= 5:
							r := lim.ReserveN(at, pairs[o.pair], o.n)
							if !r.OK() {
								panic(r.Err())
							}
							rs = append(rs, &mine{r: r, pair: o.pair, n: o.n})
						case o.kind <= 7:
							if len(rs) == 0 {
								continue
							}
							c := rs[o.cancel%len(rs)]
							// Only what has not gone yet can be cancelled.
							if !c.cancelled && !c.r.TimeToAct().Before(present) && !at.After(c.r.TimeToAct()) {
								c.r.CancelAt(at)
								c.cancelled = true
							}
						case o.kind == 8:
							lim.Refused(at, pairs[o.pair])
						default:
							lim.Accepted(at, pairs[o.pair])
						}
					}
					mu.Lock()
					defer mu.Unlock()
					for _, r := range rs {
						if !r.cancelled {
							log = append(log, sent{pair: r.pair, n: r.n, at: r.r.TimeToAct()})
						}
					}
				})
			}
			wg.Wait()
			clk.Add(time.Duration(rapid.Int64Range(0, int64(30*time.Second)).Draw(t, "advance")))
		}
		for i := range pairs {
			var sends []time.Time
			for _, s := range log {
				if s.pair == i {
					for range s.n {
						sends = append(sends, s.at)
					}
				}
			}
			for k, v := range pairlimit.Replay(pairlimit.Meta, sends) {
				if !v.Accepted {
					t.Fatalf("pair %d: send %d at %v refused by the model (burst %v+%d, debt %v)",
						i, k, v.At.Sub(t0), v.BurstStart.Sub(t0), v.BurstLen, v.Debt)
				}
			}
		}
		// Memory: two hours on, every debt and 131056 count has expired;
		// traffic to one other pair evicts all the states.
		later := clk.Now().Add(2 * time.Hour)
		clk.Set(later)
		other, _ := pairlimit.NewPair("1002", "237690000009")
		for range 20_000 {
			limA.AllowN(later, other, 1)
		}
		if got := limA.Len(); got > 1 {
			t.Fatalf("Len = %d two hours after every debt, want at most 1", got)
		}
	})
}
