package throughput

import (
	"testing"
	"time"

	"github.com/wapace/wapace/internal/clocktest"
)

// A step of the system's wall clock while a number is paced on the real
// clock: the window of writes and the bucket keep their instants on the
// monotonic clock, so a step forward frees no room and a step back holds
// nothing. (On the wall clock's instants, a step forward of a second
// emptied the window, and a second after a cut to 80 msg/s held 128
// writes; a step back held every send for the step.)
func TestAStepOfTheWallClockMovesNoSlot(t *testing.T) {
	for _, step := range []time.Duration{2 * time.Second, 10 * time.Minute, -2 * time.Second, -10 * time.Minute} {
		t.Run(step.String(), func(t *testing.T) {
			l := New(Default, withWriteWindow())
			now := time.Now()
			for i := range Default {
				k, wait := letWrite(l, now)
				if k == nil {
					t.Fatalf("write %d refused, wait %v", i, wait)
				}
				k.Wrote(now)
			}
			later := now.Add(10 * time.Millisecond)
			asked := clocktest.WallStepped(later, step)
			if k, wait := letWrite(l, asked); k != nil || wait < 900*time.Millisecond || wait > time.Second {
				t.Errorf("after %d writes and a step of %v: let = %v, wait %v; want a refusal for about 1s", Default, step, k != nil, wait)
			}

			// The bucket: a queue of 200 slots at 80 msg/s stays where
			// it was, asked before and after the step.
			var last Reservation
			for range 200 {
				last = l.ReserveN(later, 1)
			}
			next := l.ReserveN(asked, 1)
			gap := next.TimeToAct().Sub(last.TimeToAct())
			if gap <= 0 || gap > 20*time.Millisecond {
				t.Errorf("step %v: the slot after the queue is %v after its last, want one interval", step, gap)
			}
			if d, want := next.DelayFrom(asked), last.DelayFrom(later); d < want || d > want+20*time.Millisecond {
				t.Errorf("step %v: the next slot is %v away from the stepped clock, want about %v", step, d, want)
			}
		})
	}
}

// A messaging tier without a Store counts its 24 hours on the monotonic
// clock too: a step forward of an hour does not expire a recipient
// counted 23.5 hours ago, and the RetryAt of a full tier is where the
// stepped clock's own readings, and its wall reading, put it.
func TestAStepOfTheWallClockExpiresNoRecipient(t *testing.T) {
	clk := clocktest.NewStepped()
	tier := NewTier(1, WithClock(clk))
	if cl := tier.Claim(clk.Now().Add(-24*time.Hour+30*time.Minute), "15550000001"); !cl.OK() {
		t.Fatal("the first recipient refused")
	}
	clk.Step(time.Hour)
	now := clk.Now()
	cl := tier.Claim(now, "15550000002")
	if cl.OK() {
		t.Fatal("a second recipient admitted after the step, with the tier full")
	}
	want := 30 * time.Minute
	if d := cl.RetryAt().Sub(now); d < want-time.Second || d > want {
		t.Errorf("RetryAt %v away, want %v", d, want)
	}
	if d := cl.RetryAt().Round(0).Sub(now.Round(0)); d < want-time.Second || d > want {
		t.Errorf("RetryAt %v away on the wall clock, want %v", d, want)
	}
}
