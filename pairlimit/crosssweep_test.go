package pairlimit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
)

// TestCrossSweepReachesShardsNoCallReaches: the sweep passes over a shard
// where nothing can have expired without taking its lock, judging by a
// bound of the shard's Dues. A Due written below that bound after the
// shard last swept itself must lower it, or the pair it belongs to is never
// dropped once no call reaches its shard. Every shard first holds pairs
// reserved ten hours ahead (its bound rises there), then one pair each
// reserved at the present; an hour later traffic to a single pair of
// another number must sweep every present pair out through the other
// shards.
func TestCrossSweepReachesShardsNoCallReaches(t *testing.T) {
	t.Parallel()
	clk := newFakeClock(t0)
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithClock(clk))
	const n = 4096
	ahead := t0.Add(10 * time.Hour)
	for range 20 {
		for i := range n {
			lim.ReserveN(ahead, mustPair(t, "1001", fmt.Sprintf("2376%08d", i)), 1)
		}
	}
	for i := range n {
		lim.ReserveN(t0, mustPair(t, "1001", fmt.Sprintf("2377%08d", i)), 1)
	}
	if got := lim.Len(); got != 2*n {
		t.Fatalf("Len = %d, want %d", got, 2*n)
	}
	later := t0.Add(time.Hour)
	clk.Set(later)
	other := mustPair(t, "1002", "237690000001")
	for range 100_000 { // about 3,000 sweeps of 8 shards: every shard many times
		lim.ReserveN(later, other, 1)
	}
	if got := lim.Len(); got != n+1 {
		t.Errorf("Len = %d an hour later, want %d: the pairs that owe ten hours ahead and the one in use", got, n+1)
	}
}
