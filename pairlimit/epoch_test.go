package pairlimit_test

import (
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
)

// A reservation far ahead (beyond what a slot holds inline) keeps its exact
// debt, can be given back, and leaves other pairs alone.
func TestFarFutureReservation(t *testing.T) {
	t.Parallel()
	clk := newFakeClock(t0)
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithClock(clk), pairlimit.WithMargin(0))
	p := mustPair(t, "1001", "237690000001")
	far := t0.Add(100 * 24 * time.Hour)
	r := lim.ReserveN(far, p, 2)
	if !r.TimeToAct().Equal(far) {
		t.Fatalf("acts at %v", r.TimeToAct())
	}
	if at, _ := lim.ReadyAt(t0, p, 1); !at.Equal(far.Add(12 * time.Second)) {
		t.Fatalf("ReadyAt = %v, want %v", at, far.Add(12*time.Second))
	}
	r2 := lim.ReserveN(t0, p, 1)
	if !r2.TimeToAct().Equal(far.Add(12 * time.Second)) {
		t.Fatalf("next acts at %v", r2.TimeToAct())
	}
	r2.CancelAt(t0)
	r.CancelAt(t0)
	if at, _ := lim.ReadyAt(t0, p, 1); !at.Equal(t0) {
		t.Errorf("after both give-backs ReadyAt = %v, want %v", at, t0)
	}
	other := mustPair(t, "1001", "237690000002")
	if d := lim.ReserveN(t0, other, 1).DelayFrom(t0); d != 0 {
		t.Errorf("another pair waits %v", d)
	}
}

// Weeks of time moving on, in steps of hours, keep every pair's pacing
// exact while the tables' epochs move along.
func TestPacingExactAcrossWeeks(t *testing.T) {
	t.Parallel()
	clk := newFakeClock(t0)
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithClock(clk), pairlimit.WithMargin(0))
	pairs := make([]pairlimit.Pair, 50)
	for i := range pairs {
		pairs[i] = mustPair(t, "1001", "2376900"+string(rune('0'+i/10))+string(rune('0'+i%10))+"01")
	}
	now := t0
	for step := range 24 * 21 {
		now = now.Add(time.Hour)
		clk.Set(now)
		for i, p := range pairs {
			if (step+i)%3 == 0 {
				continue
			}
			first := lim.ReserveN(now, p, 3)
			second := lim.ReserveN(now, p, 1)
			if !first.TimeToAct().Equal(now) || !second.TimeToAct().Equal(now.Add(18*time.Second)) {
				t.Fatalf("step %d pair %d: acts at %v and %v", step, i, first.TimeToAct().Sub(now), second.TimeToAct().Sub(now))
			}
			second.CancelAt(now)
			if at, _ := lim.ReadyAt(now, p, 1); !at.Equal(now.Add(18 * time.Second)) {
				t.Fatalf("step %d pair %d: after give-back ready at +%v", step, i, at.Sub(now))
			}
		}
	}
}
