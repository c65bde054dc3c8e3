// Package throughputtest is the conformance kit for implementations of
// [throughputstore.Store]: one suite that the in-memory store, the Redis store
// and anyone's own store run alike.
//
//	func TestMyStore(t *testing.T) {
//		throughputtest.TestStore(t, func(t *testing.T) throughputstore.Store { return mystore.New(...) })
//	}
//
// The suite checks that every method applies exactly the pure rule its
// documentation names ([throughputstore.BucketState], [throughputstore.TierState]),
// call by call against the model at shuffled instants, and that several
// [throughput.Limiter]s sharing one store from many goroutines never admit
// more than the number's figure in any closed one-second window.
package throughputtest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/throughputstore"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestStore runs the conformance suite against the stores newStore
// returns. Each call of newStore must return a store in which the keys the
// suite uses (it names its own per subtest) hold no state.
func TestStore(t *testing.T, newStore func(t *testing.T) throughputstore.Store) {
	t.Run("BucketModel", func(t *testing.T) { testBucketModel(t, newStore(t)) })
	t.Run("TierModel", func(t *testing.T) { testTierModel(t, newStore(t)) })
	t.Run("SharedLimiters", func(t *testing.T) { testShared(t, newStore(t)) })
	t.Run("SharedTiers", func(t *testing.T) { testSharedTiers(t, newStore(t)) })
	t.Run("TierFutureClaim", func(t *testing.T) { testTierFuture(t, newStore(t)) })
	t.Run("LateRateCut", func(t *testing.T) { testLateCut(t, newStore(t)) })
	t.Run("MixedRates", func(t *testing.T) { testMixedRates(t, newStore(t)) })
	t.Run("UnusedSlot", func(t *testing.T) { testUnusedSlot(t, newStore(t)) })
}

// testUnusedSlot is the write-time check's give-back: a slot found late
// just before its write is cancelled at its own instant, after that
// instant has passed. When it is the latest reservation the bucket is as
// if it had not been made (the next reservation gets the same slot);
// when a later one stands on it nothing changes.
func testUnusedSlot(t *testing.T, s throughputstore.Store) {
	lim := throughput.New(throughput.Default, throughput.WithStore(s, "106540352242996"))
	var last throughput.Reservation
	for range 10 { // a queue: the burst is spent
		last = lim.ReserveN(t0, 1)
	}
	slot := last.TimeToAct()
	last.CancelAt(slot)            // found 50 ms late at slot+50ms: given back at its own instant
	again := lim.ReserveN(slot, 1) // asked at the slot's instant, as the model's clock allows
	if !again.OK() || !again.TimeToAct().Equal(slot) {
		t.Fatalf("after giving back the latest slot (+%v) the next is at +%v", slot.Sub(t0), again.TimeToAct().Sub(t0))
	}
	// A slot with a later one on it stays spent.
	a := lim.ReserveN(t0, 1)
	b := lim.ReserveN(t0, 1)
	a.CancelAt(a.TimeToAct())
	c := lim.ReserveN(t0, 1)
	if !c.TimeToAct().After(b.TimeToAct()) {
		t.Fatalf("a slot under a later one was given back: +%v is not after +%v", c.TimeToAct().Sub(t0), b.TimeToAct().Sub(t0))
	}
}

// testMixedRates alternates 2,000 sends asked at one instant between two
// Limiters of one number, one of them at a rate cut by a 130429: no closed
// second holds more than the figure, and the queue stays of the order of
// the sends' own spacing (a store restating the whole queue from the
// instant asked at each change of rate stretched it geometrically, to
// over a million hours).
func testMixedRates(t *testing.T, s throughputstore.Store) {
	key := "106540352242997"
	a := throughput.New(throughput.Upgraded, throughput.WithStore(s, key))
	b := throughput.New(throughput.Upgraded, throughput.WithStore(s, key))
	thr := errcodes.ThroughputLimit.Class() // the hold errcodes gives a 130429
	b.Throttled(t0, thr.Wait, thr.MaxWait)
	at := t0.Add(2 * time.Second)
	var acts []time.Time
	for i := range 2000 {
		r := [2]*throughput.Limiter{a, b}[i%2].ReserveN(at, 1)
		if !r.OK() {
			t.Fatalf("ReserveN: %v", r.Err())
		}
		acts = append(acts, r.TimeToAct())
	}
	if d := acts[len(acts)-1].Sub(at); d > 15*time.Second {
		t.Fatalf("2,000 sends queued over %v", d)
	}
	slices.SortFunc(acts, func(a, b time.Time) int { return a.Compare(b) })
	j := 0
	for i := range acts {
		for acts[i].Sub(acts[j]) > time.Second {
			j++
		}
		if i-j+1 > a.PerSecond() {
			t.Fatalf("%d admitted in the closed second ending +%v; the figure is %d", i-j+1, acts[i].Sub(at), a.PerSecond())
		}
	}
}

// testLateCut reserves five seconds' worth of sends at 1,000 per second,
// then learns of two 130429 events from the first instants (reports so
// late that their holds end before the queue does) and reserves more at
// the cut rate: no
// closed second may hold more than the figure. (A store that prices the
// debt ahead of TAT at each call's interval let 1,002 sends into one
// second: a slower interval widens the burst's slack behind TAT and slots
// new sends among those already reserved.)
func testLateCut(t *testing.T, s throughputstore.Store) {
	lim := throughput.New(throughput.Upgraded, throughput.WithStore(s, "106540352242998"))
	var acts []time.Time
	reserve := func(n int) {
		for range n {
			r := lim.ReserveN(t0, 1)
			if !r.OK() {
				t.Fatalf("ReserveN: %v", r.Err())
			}
			acts = append(acts, r.TimeToAct())
		}
	}
	reserve(5 * throughput.Upgraded)
	// Two 130429 events within 10 s cut the rate (one alone holds it);
	// the second's hold ends before the queue does.
	thr := errcodes.ThroughputLimit.Class() // the hold errcodes gives a 130429
	lim.Throttled(t0, thr.Wait, thr.MaxWait)
	lim.Throttled(t0.Add(2*time.Second), thr.Wait, thr.MaxWait)
	reserve(throughput.Upgraded)
	slices.SortFunc(acts, func(a, b time.Time) int { return a.Compare(b) })
	j := 0
	for i := range acts {
		for acts[i].Sub(acts[j]) > time.Second {
			j++
		}
		if i-j+1 > lim.PerSecond() {
			t.Fatalf("%d admitted in the closed second ending +%v; the figure is %d", i-j+1, acts[i].Sub(t0), lim.PerSecond())
		}
	}
}

// testTierFuture claims at an instant 10 s ahead of the real present p: a
// store must not drop, on that claim, a count still live at p (a store
// that prunes at the instant asked rather than at the present admits a
// third recipient into a tier of 2). The store's clock, if any, must not
// run ahead of the real one.
func testTierFuture(t *testing.T, s throughputstore.Store) {
	const window = (24 * time.Hour)
	ctx := context.Background()
	key := "portfolio-future"
	p := time.Now()
	start := p.Add(-window + 5*time.Second)
	for _, c := range []struct {
		to uint64
		at time.Time
	}{{1, start}, {2, start.Add(time.Hour)}, {2, p.Add(10 * time.Second)}} {
		if _, ok, _, err := s.Claim(ctx, key, c.to, c.at, 2, window); err != nil || !ok {
			t.Fatalf("Claim(%d at %v) = %v, %v; want admitted", c.to, c.at, ok, err)
		}
	}
	if n, err := s.Count(ctx, key, p, window); err != nil || n != 2 {
		t.Errorf("Count(p) = %d, %v; want 2", n, err)
	}
	_, ok, retryAt, err := s.Claim(ctx, key, 3, p, 2, window)
	if err != nil || ok || !retryAt.Equal(start.Add(window)) {
		t.Errorf("Claim(3 at p) = %v, retry at %v, %v; want refused until %v (a claim 10 s ahead dropped a count live at p)",
			ok, retryAt, err, start.Add(window))
	}
	if _, ok, _, err := s.Claim(ctx, key, 3, p.Add(10*time.Second), 2, window); err != nil || !ok {
		t.Errorf("Claim(3 at p+10s) = %v, %v; want admitted (recipient 1 expired at p+5s)", ok, err)
	}
}

// testSharedTiers runs several Tiers of one portfolio over s from many
// goroutines, each claiming recipients of its own and some of everyone's,
// within one window: exactly the limit of distinct recipients is admitted.
func testSharedTiers(t *testing.T, s throughputstore.Store) {
	const (
		limit      = 20
		tiers      = 4
		goroutines = 16
		perG       = 12
	)
	key := "portfolio-shared"
	ts := make([]*throughput.Tier, tiers)
	for i := range ts {
		ts[i] = throughput.NewTier(limit, throughput.WithStore(s, key))
	}
	var mu sync.Mutex
	admitted := map[string]bool{}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 17))
			for i := range perG {
				to := fmt.Sprint(237690000000 + g*perG + i)
				if rng.IntN(4) == 0 {
					to = fmt.Sprint(237690000000 + rng.IntN(goroutines*perG))
				}
				at := t0.Add(time.Duration(rng.Int64N(int64(time.Second))))
				c := ts[g%tiers].Claim(at, to)
				if err := c.Err(); err != nil {
					t.Errorf("Claim: %v", err)
					return
				}
				if c.OK() {
					mu.Lock()
					admitted[to] = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(admitted) != limit {
		t.Fatalf("%d distinct recipients admitted within one window, limit %d", len(admitted), limit)
	}
	if n := ts[0].Count(t0.Add(time.Second)); n != limit {
		t.Fatalf("Count = %d, want %d", n, limit)
	}
}

func testBucketModel(t *testing.T, s throughputstore.Store) {
	ctx := context.Background()
	now := t0
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 3))
		key := fmt.Sprint("10654035224", seed)
		interval := time.Second / time.Duration(20+rng.IntN(60))
		burst := 1 + rng.IntN(5)
		var model throughputstore.BucketState
		var tickets []throughputstore.BucketTicket
		now = now.Add(time.Hour)
		latest := int64(math.MinInt64) // the latest instant asked of the key
		for step := range 400 {
			now = now.Add(time.Duration(rng.Int64N(int64(60 * time.Millisecond))))
			if rng.IntN(100) == 0 {
				now = now.Add(36 * time.Hour)
			}
			at := now.Add(time.Duration(rng.Int64N(int64(200*time.Millisecond))) - 50*time.Millisecond)
			latest = max(latest, at.UnixNano())
			if rng.IntN(25) == 0 { // the rate changes (SetMPSAt, a 130429's cut)
				interval = time.Second / time.Duration(20+rng.IntN(60))
			}
			where := func() string { return fmt.Sprintf("seed %d step %d", seed, step) }
			switch k := rng.IntN(10); {
			case k < 6:
				n := 1 + rng.IntN(burst+1) // sometimes above the burst
				maxWait := time.Duration(math.MaxInt64)
				if rng.IntN(3) == 0 {
					maxWait = time.Duration(rng.Int64N(int64(100 * time.Millisecond)))
				}
				tk, ok, err := s.Reserve(ctx, key, at, n, interval, burst, maxWait)
				if err != nil {
					t.Fatalf("%s: Reserve: %v", where(), err)
				}
				next := model.Next(at.UnixNano(), n, interval, burst)
				wantOK := n <= burst && (maxWait == time.Duration(math.MaxInt64) || next-at.UnixNano() <= int64(maxWait))
				if ok != wantOK || (ok && tk.Act != next) {
					t.Fatalf("%s: Reserve(n=%d) = ok %v act %d; model ok %v act %d; model %+v at %d iv %d tk %+v", where(), n, ok, tk.Act, wantOK, next, model, at.UnixNano(), interval, tk)
				}
				if !ok {
					continue
				}
				if tk.PrevTop == 0 && tk.PrevTAT == 0 && model.Expired(latest) {
					model = throughputstore.BucketState{} // forgotten, as Expired allows
				}
				var mt throughputstore.BucketTicket
				model, mt = model.Reserve(at.UnixNano(), n, interval, burst, tk.ID)
				if mt.Act != tk.Act || mt.PrevTop != tk.PrevTop || tk.ID == 0 {
					t.Fatalf("%s: ticket %+v, model %+v", where(), tk, mt)
				}
				tickets = append(tickets, tk)
			case k < 8 && len(tickets) > 0:
				tk := tickets[rng.IntN(len(tickets))]
				got, err := s.Cancel(ctx, key, at, tk)
				if err != nil {
					t.Fatalf("%s: Cancel: %v", where(), err)
				}
				var want bool
				model, want = model.Cancel(tk, at.UnixNano())
				if got != want {
					t.Fatalf("%s: Cancel = %v, model %v", where(), got, want)
				}
			default:
				until := at.Add(time.Duration(rng.Int64N(int64(2 * time.Second))))
				got, err := s.Hold(ctx, key, until)
				if err != nil {
					t.Fatalf("%s: Hold: %v", where(), err)
				}
				model = model.Extend(until.UnixNano())
				if got.UnixNano() != model.Hold {
					t.Fatalf("%s: Hold = %d, model %d", where(), got.UnixNano(), model.Hold)
				}
			}
		}
	}
}

func testTierModel(t *testing.T, s throughputstore.Store) {
	ctx := context.Background()
	const window = (24 * time.Hour)
	now := t0
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 5))
		key := fmt.Sprint("portfolio-", seed)
		limit := []int{0, 3, 10}[seed]
		model := throughputstore.TierState{Last: map[uint64]int64{}}
		var tickets []throughputstore.TierTicket
		now = now.Add(72 * time.Hour)
		latest := now
		for step := range 400 {
			now = now.Add(time.Duration(rng.Int64N(int64(3 * time.Hour))))
			at := now.Add(-time.Duration(rng.Int64N(int64(time.Minute))))
			if at.After(latest) {
				latest = at
			}
			where := func() string { return fmt.Sprintf("seed %d step %d", seed, step) }
			switch k := rng.IntN(10); {
			case k < 6:
				to := uint64(237690000000 + rng.IntN(15))
				tk, ok, retry, err := s.Claim(ctx, key, to, at, limit, window)
				if err != nil {
					t.Fatalf("%s: Claim: %v", where(), err)
				}
				mt, wantOK, wantRetry := model.Claim(to, at.UnixNano(), limit, window)
				if ok != wantOK || (ok && tk != mt) || (!ok && retry.UnixNano() != wantRetry) {
					t.Fatalf("%s: Claim = %v %+v %v; model %v %+v %v", where(), ok, tk, retry.UnixNano(), wantOK, mt, wantRetry)
				}
				if !ok && !retry.After(at) {
					t.Fatalf("%s: retry at %v is not after %v", where(), retry, at)
				}
				if ok {
					tickets = append(tickets, tk)
				}
			case k < 8 && len(tickets) > 0:
				tk := tickets[rng.IntN(len(tickets))]
				got, err := s.Release(ctx, key, tk)
				if err != nil {
					t.Fatalf("%s: Release: %v", where(), err)
				}
				// A count that expired may be gone already: whether its
				// Release reports true is the store's business.
				expired := tk.At <= latest.UnixNano()-int64(window)
				if want := model.Release(tk); got != want && !expired {
					t.Fatalf("%s: Release = %v, model %v", where(), got, want)
				}
			default:
			}
			got, err := s.Count(ctx, key, at, window)
			if err != nil {
				t.Fatalf("%s: Count: %v", where(), err)
			}
			if want := model.Count(at.UnixNano(), window); got != want {
				t.Fatalf("%s: Count = %d, model %d", where(), got, want)
			}
		}
	}
}

// testShared runs several Limiters of one number over s from many
// goroutines and checks every closed one-second window of what they
// admitted (less what was given back) against the number's figure.
func testShared(t *testing.T, s throughputstore.Store) {
	const (
		mps        = 80
		limiters   = 4
		goroutines = 16
		perG       = 150
	)
	key := "106540352242999"
	lims := make([]*throughput.Limiter, limiters)
	for i := range lims {
		lims[i] = throughput.New(mps, throughput.WithStore(s, key))
	}
	var clock atomic.Int64
	var mu sync.Mutex
	var acts []time.Time
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 13))
			lim := lims[g%limiters]
			for range perG {
				now := t0.Add(time.Duration(clock.Add(rng.Int64N(int64(2 * time.Millisecond)))))
				at := now.Add(-time.Duration(rng.Int64N(int64(5 * time.Millisecond))))
				r := lim.ReserveN(at, 1)
				if !r.OK() {
					t.Errorf("ReserveN: %v", r.Err())
					return
				}
				if rng.IntN(5) == 0 {
					r.CancelAt(at)
					continue
				}
				mu.Lock()
				acts = append(acts, r.TimeToAct())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(acts, func(a, b time.Time) int { return a.Compare(b) })
	j := 0
	for i := range acts {
		for acts[i].Sub(acts[j]) > time.Second {
			j++
		}
		if i-j+1 > mps {
			t.Fatalf("%d admitted in the closed second ending %v; the figure is %d", i-j+1, acts[i], mps)
		}
	}
	if len(acts) < goroutines*perG/2 {
		t.Fatalf("only %d admitted", len(acts))
	}
}
