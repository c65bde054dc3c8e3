package pairlimit

import (
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"pgregory.net/rapid"

	"github.com/wapace/wapace/pairlimit/pairstore"
)

// settableClock is a clock whose Now is set directly.
type settableClock struct {
	clock.Clock
	now time.Time
}

func (c *settableClock) Now() time.Time { return c.now }

// storeOnly hides a *memoryStore behind the Store interface, so that a
// Limiter takes its general path instead of ReserveN's written-out hot path.
type storeOnly struct{ pairstore.Store }

// TestPropertyHotPathMatchesGeneralPath: ReserveN writes the memory store's
// reservation out in its own body for speed. Two limiters over two memory
// stores with the same hash seed, one reached through that hot path, the
// other through the Store interface (the general path), given the same calls
// (several business numbers so that tables other than a shard's first are
// used, enough recipients to grow and rebuild tables, instants slightly in
// the past, present and up to 100 hours ahead so that Dues leave the slot
// for the side map, give-backs, 131056s) return identical reservations,
// tickets included, and keep identical states.
func TestPropertyHotPathMatchesGeneralPath(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		clk := &settableClock{Clock: clock.NewMock(), now: time.Unix(1_790_000_000, 0)}
		seed := rapid.Uint64().Draw(t, "seed") | 1
		hot := New(Meta, WithClock(clk), WithStore(&memoryStore{clock: clk, seed: seed}))
		gen := New(Meta, WithClock(clk), WithStore(storeOnly{&memoryStore{clock: clk, seed: seed}}))
		if hot.mem == nil || gen.mem != nil {
			t.Fatal("the limiters do not take the paths under test")
		}
		var pairs []Pair
		for f := range 3 {
			for i := range 40 {
				to := fmt.Sprintf("2376900%05d", i)
				if i == 0 {
					to = "US.13491208655302741918" // a hashed BSUID
				}
				p, err := NewPair(fmt.Sprint(106540352242922+f), to)
				if err != nil {
					t.Fatal(err)
				}
				pairs = append(pairs, p)
			}
		}
		type both struct{ h, g Reservation }
		var made []both
		for step := range rapid.IntRange(1, 400).Draw(t, "steps") {
			clk.now = clk.now.Add(time.Duration(rapid.Int64Range(0, int64(3*time.Second)).Draw(t, "advance")))
			at := clk.now
			switch rapid.IntRange(0, 3).Draw(t, "when") {
			case 0:
				at = at.Add(-time.Duration(rapid.Int64Range(0, int64(900*time.Millisecond)).Draw(t, "back")))
			case 1:
				at = at.Add(time.Duration(rapid.Int64Range(0, int64(100*time.Hour)).Draw(t, "ahead")))
			}
			p := pairs[rapid.IntRange(0, len(pairs)-1).Draw(t, "pair")]
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3, 4, 5:
				n := rapid.IntRange(0, 46).Draw(t, "n")
				h, g := hot.ReserveN(at, p, n), gen.ReserveN(at, p, n)
				if h.ok != g.ok || h.tk != g.tk || h.n != g.n || h.pair != g.pair {
					t.Fatalf("step %d: ReserveN(%v, %v, %d): hot path %+v, general path %+v", step, at, p, n, h.tk, g.tk)
				}
				made = append(made, both{h, g})
			case 6, 7:
				if len(made) > 0 {
					r := made[rapid.IntRange(0, len(made)-1).Draw(t, "cancel")]
					if h, g := r.h.cancel(at.UnixNano()), r.g.cancel(at.UnixNano()); h != g {
						t.Fatalf("step %d: CancelAt gave back %v on the hot path, %v on the general path", step, h, g)
					}
				}
			case 8:
				if h, g := hot.Refused(at, p), gen.Refused(at, p); h != g {
					t.Fatalf("step %d: Refused held %v on the hot path, %v on the general path", step, h, g)
				}
			default:
				hot.Accepted(at, p)
				gen.Accepted(at, p)
			}
			for _, q := range pairs {
				h, _ := hot.ReadyAt(clk.now, q, 1)
				g, _ := gen.ReadyAt(clk.now, q, 1)
				if !h.Equal(g) {
					t.Fatalf("step %d: %v ready at %v on the hot path, %v on the general path", step, q, h, g)
				}
			}
			if h, g := hot.mem.Len(), gen.store.(storeOnly).Store.(*memoryStore).Len(); h != g {
				t.Fatalf("step %d: hot path holds %d states, general path %d", step, h, g)
			}
		}
	})
}
