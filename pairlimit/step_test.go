package pairlimit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/wapace/wapace/internal/clocktest"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

// A step of the system's wall clock moves no pair's debt on the real
// clock: its memory store keeps instants on the monotonic clock. (On the
// wall clock's, a step forward of a minute cleared the debt of a burst,
// and the pair's next message met 131056; a step back held the pair for
// the step.)
func TestAStepOfTheWallClockMovesNoDebt(t *testing.T) {
	p := mustPair(t, "106540352242922", "+57 300 000 0001")
	for _, step := range []time.Duration{time.Minute, -time.Minute} {
		for _, shared := range []bool{false, true} {
			var opts []pairlimit.Option
			if shared {
				opts = append(opts, pairlimit.WithStore(pairlimit.NewMemoryStore(nil)))
			}
			l := pairlimit.New(pairlimit.Meta, opts...)
			now := time.Now()
			burst := l.ReserveN(now, p, 3)
			if !burst.OK() || burst.DelayFrom(now) != 0 {
				t.Fatalf("the burst waits %v", burst.DelayFrom(now))
			}
			asked := clocktest.WallStepped(now.Add(time.Second), step)
			next := l.ReserveN(asked, p, 1)
			owed := 3*pairlimit.Meta.Interval + l.Margin() - time.Second
			if d := next.DelayFrom(asked); d != owed {
				t.Errorf("step %v, shared store %v: the next message waits %v, want %v", step, shared, d, owed)
			}
			if at, err := l.ReadyAt(asked, p, 1); err != nil || at.Sub(asked) <= owed {
				t.Errorf("step %v, shared store %v: ReadyAt %v away (%v)", step, shared, at.Sub(asked), err)
			}
		}
	}
}

// A memory store behind another Store (redisstore's local fallback wraps
// one) keeps its instants on the monotonic clock, and hands its tickets
// to the Limiter, which keeps the wall clock's, in wall-clock
// nanoseconds: after a step the pair's second message still waits for
// its interval.
func TestAStepOfTheWallClockThroughAWrappedStore(t *testing.T) {
	type wrapped struct{ pairstore.Store }
	clk := clocktest.NewStepped()
	l := pairlimit.New(pairlimit.Meta, pairlimit.WithClock(clk), pairlimit.WithStore(wrapped{pairlimit.NewMemoryStore(clk)}))
	for i, step := range []time.Duration{time.Minute, -2 * time.Minute} {
		p := mustPair(t, "106540352242922", fmt.Sprintf("+57 300 000 000%d", i))
		clk.Step(step)
		now := clk.Now()
		first := l.ReserveN(now, p, 1)
		second := l.ReserveN(now, p, 1)
		if d := second.DelayFrom(now) - first.DelayFrom(now); d < pairlimit.Meta.Interval || d > pairlimit.Meta.Interval+l.Margin()+time.Millisecond {
			t.Errorf("after a step of %v the second message goes %v after the first", step, d)
		}
	}
}
