package pairlimit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
)

// TestReserveNDoesNotAllocate: ReserveN with the built-in store, on the hot
// path (pairs it holds, of several business numbers, a hashed BSUID among
// them) and with give-backs between, and on a zero Limiter, makes no
// allocation per call (a table's growth, amortised, rounds to none).
func TestReserveNDoesNotAllocate(t *testing.T) {
	clk := newFakeClock(t0)
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithClock(clk))
	var ps []pairlimit.Pair
	for f := range 3 {
		for i := range 1000 {
			ps = append(ps, mustPair(t, fmt.Sprint(1001+f), fmt.Sprintf("2376%08d", i)))
		}
	}
	ps = append(ps, mustPair(t, "1001", "US.13491208655302741918"))
	at := t0
	for _, p := range ps {
		lim.ReserveN(at, p, 1)
	}
	k := 0
	if a := testing.AllocsPerRun(20_000, func() {
		at = at.Add(time.Millisecond)
		r := lim.ReserveN(at, ps[k%len(ps)], 1+k%2)
		if k++; k%3 == 0 {
			r.CancelAt(at)
		}
	}); a != 0 {
		t.Errorf("ReserveN: %v allocations a call, want 0", a)
	}
	var zero pairlimit.Limiter
	zero.ReserveN(at, ps[0], 1)
	if a := testing.AllocsPerRun(1000, func() { zero.ReserveN(at, ps[0], 1) }); a != 0 {
		t.Errorf("zero Limiter's ReserveN: %v allocations a call, want 0", a)
	}
}
