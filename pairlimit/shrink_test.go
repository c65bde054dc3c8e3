package pairlimit

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// TestShrinkKeepsRoomForSurvivors: a table that grew large and then lost
// most of its pairs is rebuilt smaller when a sweep's pass ends. The new
// table must hold the pairs that still owe with room to spare: rebuilt at
// the minimum size whatever the survivors, it came out full (8 slots for 8
// pairs), and a lookup of a missing pair, or a deletion, then probed for
// an empty slot for ever with the shard's lock held (more than 8 survivors
// hung the rebuild itself).
func TestShrinkKeepsRoomForSurvivors(t *testing.T) {
	t.Parallel()
	clk := &settableClock{Clock: clock.NewMock(), now: time.Unix(1_790_000_000, 0)}
	lim := New(Meta, WithClock(clk))
	ps := shardPairs(t, lim.mem, "1001", 201)
	now := clk.now
	for i, p := range ps[:200] {
		at := now
		if i < 8 {
			at = now.Add(10 * time.Hour) // these 8 still owe an hour on
		}
		lim.ReserveN(at, p, 1)
	}
	sh := &lim.mem.shards[0]
	if sh.own.live != 200 {
		t.Fatalf("table holds %d pairs, want 200", sh.own.live)
	}
	clk.now = now.Add(time.Hour)
	for range 1600 { // 100 sweeps of 16 slots: whole passes over the table and their ends
		lim.ReserveN(clk.now, ps[0], 1)
		sh.mu.Lock()
		live, size := int(sh.own.live), len(sh.own.slots)
		sh.mu.Unlock()
		if live >= size || live > int(sh.own.limit) {
			t.Fatalf("table of %d slots holds %d pairs (limit %d): no room to probe", size, live, sh.own.limit)
		}
	}
	if got := lim.Len(); got != 8 {
		t.Errorf("Len = %d, want the 8 pairs that still owe", got)
	}
	// A new pair in the shrunk table, and a look-up of a missing one.
	if r := lim.ReserveN(clk.now, ps[200], 1); !r.OK() {
		t.Fatal(r.Err())
	}
	if _, err := lim.ReadyAt(clk.now, ps[100], 1); err != nil {
		t.Fatal(err)
	}
}
