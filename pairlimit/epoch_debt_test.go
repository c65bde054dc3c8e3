package pairlimit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// TestDebtBeforeTableEpochKept reproduces the failure
// TestPropertyMemoryStoreMatchesModel found: the store's clock a day ahead
// of the instants asked (a store left on the real clock while the instants
// are simulated), a business number's first call asks two days ahead, and
// the reservation is given back. The number's table then counted its slot
// Dues from an epoch 19.5 h before the earlier of that instant and the
// clock, a day after the present; a debt written at the present ended
// before that epoch, and a slot holds a Due at or before its epoch as
// "owes nothing": the pair's next message went at once instead of 6 s
// later, and a 131056's hold was not kept. Every follow-up must see the
// debt the one before it left, through the store and through a Limiter.
func TestDebtBeforeTableEpochKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	present := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	far := present.Add(48 * time.Hour)
	p := Pair{from: 106540352242922, to: 237690000001}
	cost := Meta.Interval + DefaultMargin
	cases := []struct {
		name string
		// then runs the calls at the present after the give-back and
		// returns when the pair's next message may go, and when it must.
		then func(t *testing.T, s *memoryStore, lim *Limiter) (got, want time.Time)
	}{
		{"reserve twice", func(t *testing.T, s *memoryStore, lim *Limiter) (time.Time, time.Time) {
			if tk, ok, err := s.Reserve(ctx, p, present, cost, InfDuration); !ok || err != nil || tk.Act != present.UnixNano() {
				t.Fatalf("first reservation at the present: %+v %v %v", tk, ok, err)
			}
			tk, _, _ := s.Reserve(ctx, p, present, cost, InfDuration)
			return time.Unix(0, tk.Act), present.Add(cost)
		}},
		{"reserve then next", func(t *testing.T, s *memoryStore, lim *Limiter) (time.Time, time.Time) {
			s.Reserve(ctx, p, present, cost, InfDuration)
			got, _ := s.Next(ctx, p, present)
			return got, present.Add(cost)
		}},
		{"limiter reserves twice", func(t *testing.T, s *memoryStore, lim *Limiter) (time.Time, time.Time) {
			lim.ReserveN(present, p, 3)
			return lim.ReserveN(present, p, 1).TimeToAct(), present.Add(3*Meta.Interval + DefaultMargin)
		}},
		{"refused", func(t *testing.T, s *memoryStore, lim *Limiter) (time.Time, time.Time) {
			hold := lim.Refused(present, p)
			got, _ := lim.ReadyAt(present, p, 1)
			return got, present.Add(hold)
		}},
	}
	for _, c := range cases {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%s/seed%d", c.name, seed), func(t *testing.T) {
				clk := &settableClock{Clock: clock.NewMock(), now: present.Add(20 * time.Hour)}
				s := &memoryStore{clock: clk, seed: seed*0x9E3779B97F4A7C15 | 1}
				lim := New(Meta, WithClock(clk), WithStore(s))
				tk, ok, err := s.Reserve(ctx, p, far, cost, InfDuration)
				if !ok || err != nil {
					t.Fatalf("Reserve two days ahead: %v %v", ok, err)
				}
				if back, err := s.Cancel(ctx, p, present, tk); !back || err != nil {
					t.Fatalf("give-back: %v %v", back, err)
				}
				if got, want := c.then(t, s, lim); !got.Equal(want) {
					t.Fatalf("the pair's next message may go at +%v, want +%v: the debt written at the present was lost",
						got.Sub(present), want.Sub(present))
				}
			})
		}
	}
}
