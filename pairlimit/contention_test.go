package pairlimit

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// shardPairs returns n pairs of business number from that fall in shard
// 0 of m, so that every call on them contends for one lock. A shard holds
// one pair in 1 << shardBits: the candidates (the recipients +2376 and 8
// digits, in order) are hashed as keys, and only those in shard 0 are
// parsed (parsing every candidate took most of the test's time under the
// race detector).
func shardPairs(t *testing.T, m *memoryStore, from string, n int) []Pair {
	t.Helper()
	probe, err := NewPair(from, "237600000000")
	if err != nil {
		t.Fatal(err)
	}
	var out []Pair
	for i := 0; len(out) < n; i++ {
		key := uint64(237600000000 + i) // the key of +2376 and i in 8 digits
		if m.hash(probe.from, key)>>(64-shardBits) != 0 {
			continue
		}
		p, err := NewPair(from, fmt.Sprintf("2376%08d", i))
		if err != nil {
			t.Fatal(err)
		}
		if p.to != key || m.hash(p.from, p.to)>>(64-shardBits) != 0 {
			t.Fatalf("pair %v: key %d, want %d in shard 0", p, p.to, key)
		}
		out = append(out, p)
	}
	return out
}

// TestContendedShardSchedulesAndEviction: 64 goroutines call ReserveN on
// pairs of one shard, so that most calls find its lock taken and leave
// the hot path for reserveWaiting. Every pair's admitted sends, cancelled
// ones left out, must replay as accepted through Meta's model; and the
// pairs that owe nothing must still be evicted, round after round, when
// every call contends.
func TestContendedShardSchedulesAndEviction(t *testing.T) {
	t.Parallel()
	clk := &settableClock{Clock: clock.NewMock(), now: time.Unix(1_790_000_000, 0)}
	lim := New(Meta, WithClock(clk))
	hot := shardPairs(t, lim.mem, "1001", 8)
	other := shardPairs(t, lim.mem, "1002", 4)
	pool := shardPairs(t, lim.mem, "2000", 12*64*8)
	for round := range 12 {
		now := clk.now
		var mu sync.Mutex
		sends := make(map[Pair][]time.Time)
		var wg sync.WaitGroup
		news := make([][]Pair, 64)
		for g := range news {
			k := (round*64 + g) * 8
			news[g] = pool[k : k+8]
		}
		for g := range 64 {
			wg.Go(func() {
				var mine []time.Time
				var pairs []Pair
				for i := range 200 {
					p := hot[(g+i)%len(hot)]
					if i%5 == 4 {
						p = other[i%len(other)]
					}
					at := now.Add(time.Duration(i%7-2) * 100 * time.Millisecond) // past, present, future
					r := lim.ReserveN(at, p, 1+i%3)
					if !r.OK() {
						t.Error(r.Err())
						return
					}
					if i%11 == 0 {
						if r.cancel(at.UnixNano()) {
							continue // given back: not sent
						}
					}
					for range 1 + i%3 {
						mine = append(mine, r.TimeToAct())
						pairs = append(pairs, p)
					}
					if i%25 == 0 { // a new pair, owing a few seconds
						lim.ReserveN(now, news[g][i/25], 1)
					}
				}
				mu.Lock()
				for k, at := range mine {
					sends[pairs[k]] = append(sends[pairs[k]], at)
				}
				mu.Unlock()
			})
		}
		wg.Wait()
		for p, s := range sends {
			for i, v := range Replay(Meta, s) {
				if !v.Accepted {
					t.Fatalf("round %d: %v send %d at %v refused by the model (debt %v)", round, p, i, v.At, v.Debt)
				}
			}
		}
		clk.now = clk.now.Add(6 * time.Hour) // every debt repaid (a round owes a hot pair under 5 h)
	}
	// A day on, ordinary contended traffic on one pair sweeps the shard.
	clk.now = clk.now.Add(24 * time.Hour)
	p := hot[0]
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range 2000 {
				lim.ReserveN(clk.now, p, 1)
			}
		})
	}
	wg.Wait()
	if got := lim.Len(); got != 1 {
		t.Errorf("Len = %d after every debt was repaid, want 1 (the pair in use)", got)
	}
}
