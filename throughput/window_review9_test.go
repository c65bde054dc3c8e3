package throughput

import (
	"testing"
	"time"
)

// Review 9, finding 1: a cut of the figure forgets writes, and a raise
// after it lets them be written again within the same second.
//
// The window's ring holds limit instants: setLimit keeps only the newest
// that fit a cut (window.go, setLimit), and wrote drops the oldest when
// the ring is full. Both are said to be safe because "a cut keeps the
// window full for longer"; but a raise after the cut gives the room of
// the forgotten writes back while they are still in the last second.
//
// Scenario: a number at 80 msg/s writes 80 at t0 (a bunch after a stall,
// as window.go describes); SetMPSAt cuts it to 40 at t0+10 ms (a figure
// set by mistake, or read from a stale source) and raises it back to 80
// at t0+20 ms. At t0+30 ms the window lets 40 more writes go: 120 writes
// in 30 ms at a figure that was 80 before and after, and the window
// itself knows 80 of them were written. Without the cut it lets none.
//
// At fault: window.setLimit (keep := min(w.n, limit)) and window.wrote
// (the "Full: the oldest leaves early" branch): the ring should keep
// every instant still within the span, whatever the limit.
func TestReview9CutThenRaiseForgetsWrites(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, cut := range []bool{false, true} {
		l := New(80, withWriteWindow())
		for i := range 80 {
			k, _ := letWrite(l, t0)
			if k == nil {
				t.Fatalf("write %d of 80 at t0 refused", i)
			}
			k.Wrote(t0)
		}
		if cut {
			if err := l.SetMPSAt(t0.Add(10*time.Millisecond), 40); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.SetMPSAt(t0.Add(20*time.Millisecond), 80); err != nil {
			t.Fatal(err)
		}
		more := 0
		for range 80 {
			k, _ := letWrite(l, t0.Add(30*time.Millisecond))
			if k == nil {
				break
			}
			k.Wrote(t0.Add(30 * time.Millisecond))
			more++
		}
		if more != 0 {
			t.Errorf("cut %v: %d more writes let go 30 ms after 80 at a figure of 80 (%d in one second)", cut, more, 80+more)
		}
	}
}

// The same through wrote: writes let go before a cut and reported after
// it overflow the smaller ring, whose oldest instants are dropped; a
// raise then gives their room back.
func TestReview9CutWhilePendingThenRaise(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := New(80, withWriteWindow())
	var ks []interface{ Wrote(time.Time) }
	for i := range 80 {
		k, _ := letWrite(l, t0)
		if k == nil {
			t.Fatalf("write %d of 80 at t0 refused", i)
		}
		ks = append(ks, k)
	}
	if err := l.SetMPSAt(t0.Add(time.Millisecond), 40); err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		k.Wrote(t0.Add(2 * time.Millisecond))
	}
	if err := l.SetMPSAt(t0.Add(20*time.Millisecond), 80); err != nil {
		t.Fatal(err)
	}
	more := 0
	for range 80 {
		k, _ := letWrite(l, t0.Add(30*time.Millisecond))
		if k == nil {
			break
		}
		k.Wrote(t0.Add(30 * time.Millisecond))
		more++
	}
	if more != 0 {
		t.Errorf("%d more writes let go 30 ms after 80 at a figure of 80 (%d in one second)", more, 80+more)
	}
}
