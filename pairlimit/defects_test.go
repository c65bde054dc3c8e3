package pairlimit_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/pairlimit"
)

// fakeClock is a clock whose Now is set without clock.Mock's real 1 ms
// sleep per change.
type fakeClock struct {
	*clock.Mock
	now atomic.Int64
}

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{Mock: clock.NewMock()}
	c.Set(t)
	return c
}

func (c *fakeClock) Now() time.Time                  { return time.Unix(0, c.now.Load()) }
func (c *fakeClock) Set(t time.Time)                 { c.now.Store(t.UnixNano()) }
func (c *fakeClock) Add(d time.Duration)             { c.now.Add(int64(d)) }
func (c *fakeClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Defect 1 of issue 10: a reservation asked at a future instant (cloudapi
// reserves a pair at its number's future slot) must not make another pair's
// live debt look repaid and evicted.
func TestFutureInstantKeepsOtherPairsDebt(t *testing.T) {
	t.Parallel()
	clk := newFakeClock(t0)
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithClock(clk))
	alice := mustPair(t, "1001", "237690000001")
	lim.ReserveN(t0, alice, 1) // alice owes until +6.25 s
	for i := range 500 {       // others reserved at a future slot
		lim.ReserveN(t0.Add(10*time.Second), mustPair(t, "1001", fmt.Sprintf("2378%08d", i)), 1)
	}
	// Ordinary traffic at +1 s, enough to sweep every shard many times.
	clk.Add(time.Second)
	for i := range 20_000 {
		lim.AllowN(t0.Add(time.Second), mustPair(t, "1001", fmt.Sprintf("2377%08d", i%500)), 1)
	}
	r := lim.ReserveN(t0.Add(1900*time.Millisecond), alice, 1)
	if got := r.TimeToAct().Sub(t0); got != 6250*time.Millisecond {
		t.Fatalf("alice's next message acts at +%v, want +6.25s: her debt was forgotten", got)
	}
}

// Defect 2 of issue 10: when every call is a new pair, memory must still be
// bounded by the pairs that owe.
func TestNewPairsOnlyStayBounded(t *testing.T) {
	t.Parallel()
	clk := newFakeClock(t0)
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithClock(clk))
	const n = 200_000
	step := time.Second / 80 // 80 new recipients a second
	for i := range n {
		now := t0.Add(time.Duration(i) * step)
		clk.Set(now)
		lim.ReserveN(now, mustPair(t, "1001", fmt.Sprintf("23%010d", i)), 1)
	}
	// At 80/s a pair owes 6.25 s (+1 s kept): about 600 pairs still count.
	if got := lim.Len(); got > 5000 {
		t.Fatalf("Len = %d after %d one-off recipients, want at most 5000", got, n)
	}
}

// Defect 2 of issue 10, business numbers: tables of numbers no longer used
// are freed, and adding numbers does not copy every earlier one.
func TestManyBusinessNumbersStayBounded(t *testing.T) {
	clk := newFakeClock(t0)
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithClock(clk))
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	const numbers = 5000
	for i := range numbers {
		lim.ReserveN(t0, mustPair(t, fmt.Sprint(1_000_000+i), "237690000001"), 1)
	}
	// An hour later, traffic on one number only.
	later := t0.Add(time.Hour)
	clk.Set(later)
	for i := range 200_000 {
		lim.AllowN(later, mustPair(t, "1", fmt.Sprintf("2377%08d", i%1000)), 1)
	}
	grown := int64(heap()) - int64(before)
	runtime.KeepAlive(lim)
	if grown > 2<<20 {
		t.Fatalf("heap grew by %d KiB for %d business numbers whose pairs expired an hour ago", grown>>10, numbers)
	}
}

// Defect 3 of issue 10: give-backs are exact in any order, so that a
// cancelled pair of reservations leaves no debt behind.
func TestCancelInAnyOrderLeavesNoPhantomDebt(t *testing.T) {
	t.Parallel()
	p := mustPair(t, "1001", "237690000001")
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
	r1 := lim.ReserveN(t0, p, 1)
	r2 := lim.ReserveN(t0, p, 2) // stands on r1's debt
	r2.CancelAt(t0)
	r1.CancelAt(t0)
	if d := lim.ReserveN(t0, p, 1).DelayFrom(t0); d != 0 {
		t.Fatalf("after both give-backs the pair still owes %v", d)
	}
}

// Defect 3 of issue 10: a double cancel never gives back a later
// reservation's debt.
func TestDoubleCancelIsHarmless(t *testing.T) {
	t.Parallel()
	p := mustPair(t, "1001", "237690000001")
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
	probe := lim.ReserveN(t0, p, 1)
	probe.CancelAt(t0)
	real := lim.ReserveN(t0, p, 1) // same instant, same debt as the probe
	probe.CancelAt(t0)             // again: must not cancel real
	if !real.TimeToAct().Equal(t0) {
		t.Fatalf("real acts at %v", real.TimeToAct())
	}
	if got := lim.ReserveN(t0, p, 1).TimeToAct().Sub(t0); got != 6*time.Second {
		t.Fatalf("next acts at +%v, want +6s: the double cancel gave back the real reservation", got)
	}
}

// Defect 6 of issue 10: the zero Limiter and the zero Reservation never
// panic.
func TestZeroLimiterIsUsable(t *testing.T) {
	t.Parallel()
	var lim pairlimit.Limiter
	p := mustPair(t, "1001", "237690000001")
	now := time.Now()
	r := lim.ReserveN(now, p, 1)
	if !r.OK() || r.DelayFrom(now) != 0 {
		t.Fatalf("zero Limiter: %v, %v", r.OK(), r.Err())
	}
	if got := lim.ReserveN(now, p, 1).DelayFrom(now); got != 6250*time.Millisecond {
		t.Errorf("zero Limiter paces at %v, want Meta's 6.25s", got)
	}
	lim.Allow(p)
	lim.Reserve(p).Cancel()
	lim.Refused(now, p)
	lim.Accepted(now, p)
	_ = lim.Len()
	_ = lim.Policy()
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	_ = lim.Wait(ctx, p)
	var zr pairlimit.Reservation
	zr.Cancel()
	zr.CancelAt(now)
	zr.Refund()
	if zr.OK() || zr.Delay() != pairlimit.InfDuration || !zr.TimeToAct().IsZero() {
		t.Error("the zero Reservation is OK")
	}
}
