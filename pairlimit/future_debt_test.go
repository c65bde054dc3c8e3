package pairlimit

import (
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// TestFutureInstantsKeepBurstDebtWhateverTheClock reproduces issue 23 item
// 4: a full burst of 45 (owing 270 s), then 10,000 other pairs reserved ten
// times at an instant ten minutes ahead, then the first pair again at
// +11 s, which must wait for its debt. The store judged expiry at the
// earlier of its clock and the latest instant asked: with a clock ahead of
// the instants asked (a store left on the real clock while the instants are
// simulated, or a clock set wrong), that was the future instant, and the
// burst's debt was forgotten whenever its shard swept after the future
// calls. It must hold with every hash seed (every shard layout), the clock
// in step with the instants or two days ahead of them.
func TestFutureInstantsKeepBurstDebtWhateverTheClock(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	a := Pair{from: 1001, to: 237690000001}
	others := make([]Pair, 10_000)
	for i := range others {
		others[i] = Pair{from: 1001, to: 237800000000 + uint64(i)}
	}
	for _, ahead := range []time.Duration{0, 48 * time.Hour} {
		for seed := range uint64(8) {
			t.Run(fmt.Sprintf("clock+%v/seed%d", ahead, seed), func(t *testing.T) {
				clk := &settableClock{Clock: clock.NewMock(), now: t0.Add(ahead)}
				lim := New(Meta, WithClock(clk), WithStore(&memoryStore{clock: clk, seed: seed*0x9E3779B97F4A7C15 | 1}))
				lim.ReserveN(t0, a, 45)
				for range 10 {
					for _, p := range others {
						lim.ReserveN(t0.Add(10*time.Minute), p, 1)
					}
				}
				clk.now = clk.now.Add(11 * time.Second)
				r := lim.ReserveN(t0.Add(11*time.Second), a, 1)
				if want := t0.Add(45*Meta.Interval + DefaultMargin); !r.TimeToAct().Equal(want) {
					t.Fatalf("the first pair's next message acts at +%v, want +%v: its burst's debt was forgotten",
						r.TimeToAct().Sub(t0), want.Sub(t0))
				}
			})
		}
	}
}
