package throughput_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/throughputstore"
	"pgregory.net/rapid"
)

// TestPropertyConcurrentWindows: goroutines sharing one number (one
// Limiter, or two Limiters on one store) reserve, cancel and record
// refusals at instants in any order; the sends that go never exceed
// PerSecond in any closed one-second window.
func TestPropertyConcurrentWindows(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		mps := rapid.SampledFrom([]int{1, 20, throughput.Default, throughput.Upgraded}).Draw(t, "mps")
		limA := throughput.New(mps, throughput.WithAdaptiveRate(false))
		limB := limA
		if rapid.Bool().Draw(t, "store") {
			s := throughputstore.NewMemoryStore(nil)
			limA = throughput.New(mps, throughput.WithAdaptiveRate(false), throughput.WithStore(s, "n"))
			limB = throughput.New(mps, throughput.WithAdaptiveRate(false), throughput.WithStore(s, "n"))
		}
		type plan struct {
			kind   int
			offset time.Duration
			n      int
		}
		workers := rapid.IntRange(2, 6).Draw(t, "goroutines")
		plans := make([][]plan, workers)
		for w := range plans {
			for range rapid.IntRange(1, 60).Draw(t, "ops") {
				plans[w] = append(plans[w], plan{
					kind:   rapid.IntRange(0, 9).Draw(t, "kind"),
					offset: time.Duration(rapid.Int64Range(0, int64(3*time.Second)).Draw(t, "offset")),
					n:      rapid.IntRange(1, 3).Draw(t, "n"),
				})
			}
		}
		var (
			mu   sync.Mutex
			sent []time.Time
			wg   sync.WaitGroup
		)
		for w, pl := range plans {
			lim := limA
			if w%2 == 1 {
				lim = limB
			}
			wg.Go(func() {
				type res struct {
					r throughput.Reservation
					n int
				}
				var mine []res
				var gone []time.Time
				for _, p := range pl {
					at := t0.Add(p.offset)
					switch {
					case p.kind <= 6:
						n := min(p.n, lim.Burst())
						r := lim.ReserveN(at, n)
						if !r.OK() {
							panic(r.Err())
						}
						mine = append(mine, res{r, n})
					case p.kind <= 8:
						if len(mine) > 0 {
							last := len(mine) - 1
							mine[last].r.CancelAt(at)
							mine = mine[:last] // not sent, given back or not
						}
					default:
						refused(lim, at, errcodes.Maintenance)
					}
				}
				for _, r := range mine {
					for range r.n {
						gone = append(gone, r.r.TimeToAct())
					}
				}
				mu.Lock()
				sent = append(sent, gone...)
				mu.Unlock()
			})
		}
		wg.Wait()
		slices.SortFunc(sent, func(a, b time.Time) int { return a.Compare(b) })
		if got, limit := maxInWindow(sent, time.Second), limA.PerSecond(); got > limit {
			t.Fatalf("%d sends in one closed second, limit %d", got, limit)
		}
	})
}
