package pairlimit_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

// TestSharedStoreManyGoroutinesSchedules: three limiters with different
// margins on one memory store, twelve goroutines, instants up to
// pairstore.KeepAfterDue in the past and 90 s in the future of a clock that moves on,
// cancels and 131056s; every pair's sends pass Replay.
func TestSharedStoreManyGoroutinesSchedules(t *testing.T) {
	for seed := range uint64(20) {
		clk := newFakeClock(t0)
		store := pairlimit.NewMemoryStore(clk)
		var lims []*pairlimit.Limiter
		for i := range 3 {
			lims = append(lims, pairlimit.New(pairlimit.Meta, pairlimit.WithClock(clk), pairlimit.WithStore(store), pairlimit.WithMargin(time.Duration(i)*100*time.Millisecond)))
		}
		var pairs []pairlimit.Pair
		for i := range 4 {
			pairs = append(pairs, mustPair(t, "1001", fmt.Sprintf("23769000000%d", i)))
		}
		var mu sync.Mutex
		sends := map[int][]time.Time{}
		var wg sync.WaitGroup
		for g := range 12 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(seed, uint64(g)))
				for range 300 {
					if rng.IntN(20) == 0 {
						clk.Add(time.Duration(rng.Int64N(int64(3 * time.Second))))
					}
					now := clk.Now()
					var at time.Time
					switch rng.IntN(4) {
					case 0:
						at = now.Add(-time.Duration(rng.Int64N(int64(pairstore.KeepAfterDue))))
					case 1:
						at = now.Add(time.Duration(rng.Int64N(int64(90 * time.Second))))
					default:
						at = now
					}
					pi := rng.IntN(len(pairs))
					lim := lims[rng.IntN(len(lims))]
					switch rng.IntN(10) {
					case 0:
						lim.Refused(now, pairs[pi])
						continue
					case 1:
						lim.Accepted(now, pairs[pi])
						continue
					}
					n := 1 + rng.IntN(3)
					r := lim.ReserveN(at, pairs[pi], n)
					if !r.OK() {
						panic(r.Err())
					}
					if rng.IntN(5) == 0 && !now.After(r.TimeToAct()) {
						// Not sent: given back, or its slot stays spent.
						r.CancelAt(now)
						continue
					}
					go1 := r.TimeToAct()
					mu.Lock()
					for range n {
						sends[pi] = append(sends[pi], go1)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		for pi, s := range sends {
			for k, v := range pairlimit.Replay(pairlimit.Meta, s) {
				if !v.Accepted {
					t.Fatalf("seed %d pair %d: send %d at %v refused (burst %v+%d debt %v)", seed, pi, k, v.At.Sub(t0), v.BurstStart.Sub(t0), v.BurstLen, v.Debt)
				}
			}
		}
	}
}

// TestAbsurdPolicyCostSaturates: a burst's debt saturates instead of
// overflowing. (With Interval math.MaxInt64/2, three messages wrapped to a
// negative debt and the next reservation acted with them.)
func TestAbsurdPolicyCostSaturates(t *testing.T) {
	p := mustPair(t, "1001", "237690000001")
	for _, pol := range []pairlimit.Policy{
		{Interval: math.MaxInt64 / 2, Burst: 45},
		{Interval: math.MaxInt64, Burst: 45},
		{Interval: 6 * time.Second, Burst: math.MaxInt},
	} {
		lim := pairlimit.New(pol)
		n := min(lim.BurstCap(), 3)
		if pol.Burst == math.MaxInt {
			n = math.MaxInt
		}
		r1 := lim.ReserveN(t0, p, n)
		r2 := lim.ReserveN(t0, p, 1)
		if r1.OK() && r2.OK() && !r2.TimeToAct().After(r1.TimeToAct()) {
			t.Errorf("policy %+v, n %d: the next reservation acts at %v, with the first", pol, n, r2.TimeToAct())
		}
	}
}

// TestZeroValuesNeverPanic: every method of every zero value is safe. (The
// zero MemoryStore panicked on a nil clock.)
func TestZeroValuesNeverPanic(t *testing.T) {
	var l pairlimit.Limiter
	var p pairlimit.Pair
	q := mustPair(t, "1001", "237690000001")
	for _, pp := range []pairlimit.Pair{p, q} {
		l.Allow(pp)
		l.AllowN(t0, pp, 1)
		l.ReserveN(t0, pp, 1).CancelAt(t0)
		l.Reserve(pp).Cancel()
		l.ReserveN(t0, pp, 1).Refund()
		_, _ = l.ReadyAt(t0, pp, 1)
		l.Refused(t0, pp)
		l.Accepted(t0, pp)
		_ = pp.String()
		_ = pp.IsZero()
		_ = pp.From()
		_ = pp.To()
	}
	_ = l.Len()
	var r pairlimit.Reservation
	r.Cancel()
	r.CancelAt(t0)
	r.Refund()
	_ = r.Delay()
	_ = r.DelayFrom(t0)
	_ = r.TimeToAct()
	_ = r.Err()
	// The zero memory store: TestZeroMemoryStoreNeverPanics (internal).
	var ne pairlimit.NumberError
	_ = ne.Error()
	_ = pairlimit.Replay(pairlimit.Policy{}, nil)
	_ = pairlimit.Replay(pairlimit.Policy{}, []time.Time{{}, time.Unix(0, math.MaxInt64), time.Unix(0, math.MinInt64)})
}
