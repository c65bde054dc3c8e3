package throughput_test

import (
	"context"
	"errors"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// Defect 4 of issue 10: goroutines asking at the current time, in whatever
// order the scheduler lets them through, never exceed the number's rate in
// any closed second.
func TestConcurrentReserveNeverExceedsRate(t *testing.T) {
	t.Parallel()
	for round := range 5 {
		lim := throughput.New(throughput.Upgraded)
		var (
			mu sync.Mutex
			at []time.Time
			wg sync.WaitGroup
		)
		for range 64 {
			wg.Go(func() {
				mine := make([]time.Time, 0, 50)
				for range 50 {
					mine = append(mine, lim.ReserveN(time.Now(), 1).TimeToAct())
				}
				mu.Lock()
				at = append(at, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		sort.Slice(at, func(a, b int) bool { return at[a].Before(at[b]) })
		if got := maxInWindow(at, time.Second); got > throughput.Upgraded {
			t.Fatalf("round %d: %d slots in one closed second, limit %d", round, got, throughput.Upgraded)
		}
	}
}

// Defect 5 of issue 10: a tier of 0 admits nothing new and its retry
// instants lie in the future; a negative tier is unlimited.
func TestTierZeroAndNegativeLimits(t *testing.T) {
	t.Parallel()
	zero := throughput.NewTier(0)
	ok, retryAt := zero.Admit(t0, recipient(1))
	if ok || !retryAt.After(t0) {
		t.Fatalf("tier 0: admitted %v, retry at %v; want refused with a retry after %v", ok, retryAt, t0)
	}
	var zt throughput.Tier // the zero Tier is a tier of 0
	if ok, retryAt := zt.Admit(t0, recipient(1)); ok || !retryAt.After(t0) {
		t.Errorf("zero Tier: admitted %v, retry at %v", ok, retryAt)
	}
	zero.SetLimit(1)
	if ok, _ := zero.Admit(t0, recipient(1)); !ok {
		t.Error("refused after SetLimit(1)")
	}
	if ok, retryAt := zero.Admit(t0, recipient(2)); ok || !retryAt.After(t0) {
		t.Errorf("full tier: admitted %v, retry at %v", ok, retryAt)
	}
	neg := throughput.NewTier(-5)
	if ok, _ := neg.Admit(t0, recipient(1)); !ok || neg.Limit() != throughput.Unlimited {
		t.Errorf("negative tier: admitted %v, limit %d", ok, neg.Limit())
	}
}

// Defect 5 of issue 10: an admission that never went out is given back.
func TestTierClaimRelease(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{false, true} {
		var opts []throughput.Option
		if shared {
			opts = append(opts, throughput.WithStore(throughputstore.NewMemoryStore(nil), "portfolio"))
		}
		tier := throughput.NewTier(1, opts...)
		c := tier.Claim(t0, recipient(1))
		if !c.OK() {
			t.Fatal("first claim refused")
		}
		if tier.Claim(t0, recipient(2)).OK() {
			t.Fatal("second recipient admitted by a tier of 1")
		}
		c.Release()
		c.Release() // harmless
		if got := tier.Count(t0); got != 0 {
			t.Errorf("shared %v: Count after release = %d, want 0", shared, got)
		}
		c2 := tier.Claim(t0, recipient(2))
		if !c2.OK() {
			t.Errorf("shared %v: refused after the give-back", shared)
		}
		c.Release() // a stale release must not free recipient 2
		if tier.Claim(t0, recipient(3)).OK() {
			t.Errorf("shared %v: a stale release freed another recipient's count", shared)
		}
		renewal := tier.Claim(t0.Add(time.Hour), recipient(2))
		renewal.Release() // a renewal gives nothing back
		if got := tier.Count(t0.Add(time.Hour)); got != 1 {
			t.Errorf("shared %v: Count after releasing a renewal = %d, want 1", shared, got)
		}
	}
}

// Defect 6 of issue 10: zero values work and absurd figures are clamped.
func TestZeroValuesAndExtremes(t *testing.T) {
	t.Parallel()
	var lim throughput.Limiter
	if lim.PerSecond() != throughput.Default {
		t.Errorf("zero Limiter MPS = %d", lim.PerSecond())
	}
	r := lim.ReserveN(t0, 1)
	if !r.OK() {
		t.Fatalf("zero Limiter: %v", r.Err())
	}
	r.CancelAt(t0)
	refused(&lim, t0, errcodes.ThroughputLimit)
	lim.Accepted(t0)
	_ = lim.HeldUntil()
	var b throughput.Budget
	if !budgetAllow(&b, t0, 1) {
		t.Error("zero Budget refused a call")
	}
	budgetRefused(&b, t0, errcodes.AppRateLimit)
	_ = b.HeldUntil()
	var zr throughput.Reservation
	zr.Cancel()
	zr.CancelAt(t0)
	if zr.OK() || zr.Delay() != time.Duration(math.MaxInt64) {
		t.Error("zero Reservation is OK")
	}

	// An absurd figure is refused, not clamped: nothing admitted, with an
	// error naming it; the largest figure accepted (10,000) keeps every
	// window.
	absurd := throughput.New(math.MaxInt)
	if r := absurd.ReserveN(t0, 1); r.OK() || !errors.Is(r.Err(), throughput.ErrInvalidOption) || absurd.AllowN(t0, 1) {
		t.Errorf("New(MaxInt).ReserveN: OK %v, %v", r.OK(), r.Err())
	}
	const maxMPS = 10_000
	huge := throughput.New(maxMPS)
	if huge.PerSecond() != maxMPS {
		t.Errorf("New(%d).PerSecond() = %d", maxMPS, huge.PerSecond())
	}
	n := 0
	for huge.AllowN(t0, 1) {
		n++
	}
	if n < 50 || n > maxMPS {
		t.Errorf("New(%d) admits %d at once", maxMPS, n)
	}
	var at []time.Time
	for range 3 * maxMPS {
		at = append(at, huge.ReserveN(t0, 1).TimeToAct())
	}
	if got := maxInWindow(at, time.Second); got > maxMPS || got < maxMPS*9/10 {
		t.Errorf("New(%d): %d in one second", maxMPS, got)
	}
	if r := throughput.New(1).ReserveN(t0, 0); r.OK() || !errors.Is(r.Err(), throughput.ErrInvalidCount) {
		t.Errorf("ReserveN(0): %v", r.Err())
	}
	if err := throughput.New(1).WaitN(context.Background(), 5); !errors.Is(err, throughput.ErrBurstTooLarge) {
		t.Errorf("WaitN(5): %v", err)
	}
}

// Limiters sharing a store are one number.
func TestLimitersSharingAStore(t *testing.T) {
	t.Parallel()
	s := throughputstore.NewMemoryStore(nil)
	a := throughput.New(throughput.Coexistence, throughput.WithStore(s, "1001"))
	b := throughput.New(throughput.Coexistence, throughput.WithStore(s, "1001"))
	var at []time.Time
	for i := range 60 {
		l := a
		if i%2 == 1 {
			l = b
		}
		at = append(at, l.ReserveN(t0, 1).TimeToAct())
	}
	if got := maxInWindow(at, time.Second); got > throughput.Coexistence {
		t.Errorf("two limiters on one store admitted %d in a second", got)
	}
	refused(a, t0, errcodes.Maintenance)
	if b.AllowN(t0.Add(time.Second*4), 1) {
		t.Error("the hold of one limiter does not hold the other")
	}
}
