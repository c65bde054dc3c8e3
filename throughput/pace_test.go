package throughput_test

import (
	"testing"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
)

// TestThrottleRefusalsTogetherAreOneEvent reproduces two processes
// meeting 21 x 130429 within one second and then sending nothing for 30 s:
// refusals during the hold of the first are one event, hold 1 s and keep
// the rate.
func TestThrottleRefusalsTogetherAreOneEvent(t *testing.T) {
	t.Parallel()
	lim := throughput.New(throughput.Default)
	var holds []time.Duration
	for i := range 21 {
		holds = append(holds, lim.Refused(t0.Add(time.Duration(i)*40*time.Millisecond), errcodes.ThroughputLimit))
	}
	if holds[0] != time.Second {
		t.Fatalf("first hold %v, want 1s", holds[0])
	}
	for i, h := range holds[1:] {
		if want := time.Second - time.Duration(i+1)*40*time.Millisecond; h != want {
			t.Fatalf("refusal %d of the event returned %v, want the rest of the hold %v", i+1, h, want)
		}
	}
	if got := lim.HeldUntil(); !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("held until +%v, want +1s", got.Sub(t0))
	}
	r := lim.ReserveN(t0.Add(time.Second), 1)
	if !r.TimeToAct().Equal(t0.Add(time.Second)) {
		t.Fatalf("first send after the event at +%v, want +1s", r.TimeToAct().Sub(t0))
	}
	// The rate is unchanged: 79 sends in the next second.
	n := 0
	for at := t0.Add(time.Second); ; n++ {
		r := lim.ReserveN(at, 1)
		if r.TimeToAct().After(t0.Add(2 * time.Second)) {
			break
		}
		at = r.TimeToAct()
	}
	if n < 78 {
		t.Fatalf("%d sends in the second after the event, want the full rate (79)", n)
	}
}

// TestThrottleEventsThatKeepComingEscalate: refusals a second or more
// after an event's hold are a new event; events not separated by an
// acceptance double the hold (up to 30 s); an acceptance resets it.
func TestThrottleEventsThatKeepComingEscalate(t *testing.T) {
	t.Parallel()
	lim := throughput.New(throughput.Default, throughput.WithAdaptiveRate(false))
	now := t0
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if h := lim.Refused(now, errcodes.ThroughputLimit); h != want {
			t.Fatalf("hold %v, want %v", h, want)
		}
		if h := lim.Refused(now.Add(time.Millisecond), errcodes.ThroughputLimit); h != want-time.Millisecond {
			t.Fatalf("a refusal of the same event returned %v", h)
		}
		// Met at the hold's end: the same event, one interval.
		if h := lim.Refused(now.Add(want), errcodes.ThroughputLimit); h <= 0 || h > 13*time.Millisecond {
			t.Fatalf("a refusal at the hold's end returned %v, want one interval", h)
		}
		now = now.Add(want + time.Second) // refusals that keep coming
	}
	lim.Accepted(now)
	if h := lim.Refused(now, errcodes.ThroughputLimit); h != time.Second {
		t.Fatalf("after an acceptance the hold is %v, want 1s", h)
	}
}

// TestMarginFollowsLateness: observed lateness above half an interval
// raises the margin (and stretches the interval), lateness below it keeps
// the bare rule; a fixed headroom turns the adaptive margin off.
func TestMarginFollowsLateness(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		opts          []throughput.Option
		check, write  time.Duration
		wantMarginMin time.Duration
		wantMarginMax time.Duration
		wantTolMin    time.Duration
	}{
		{"idle", nil, 200 * time.Microsecond, 100 * time.Microsecond, 0, time.Millisecond, 6 * time.Millisecond},
		{"loaded", nil, 20 * time.Millisecond, 2 * time.Millisecond, 15 * time.Millisecond, 17 * time.Millisecond, 20 * time.Millisecond},
		{"absurd", nil, time.Hour, time.Hour, 250 * time.Millisecond, 250 * time.Millisecond, 6 * time.Millisecond},
		{"fixed", []throughput.Option{throughput.WithHeadroom(0)}, 20 * time.Millisecond, 2 * time.Millisecond, 0, 0, 6 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := throughput.New(80, tc.opts...)
			bare := lim.ReserveN(t0, 1)
			second := lim.ReserveN(t0, 1)
			bareInterval := second.TimeToAct().Sub(bare.TimeToAct())
			second.CancelAt(t0)
			bare.CancelAt(t0)
			for i := range 256 {
				slot := t0.Add(time.Duration(i) * 12 * time.Millisecond)
				checked := slot.Add(tc.check)
				lim.ObserveSend(slot, checked, checked.Add(tc.write))
			}
			m := lim.Margin()
			if m < tc.wantMarginMin || m > tc.wantMarginMax {
				t.Fatalf("margin %v, want in [%v, %v]", m, tc.wantMarginMin, tc.wantMarginMax)
			}
			if tol := lim.Tolerance(); tol < tc.wantTolMin {
				t.Fatalf("tolerance %v, want at least %v", tol, tc.wantTolMin)
			}
			// The interval is the bare one stretched by 1 + margin.
			at := t0.Add(time.Hour)
			a, b := lim.ReserveN(at, 1), lim.ReserveN(at, 1)
			got := b.TimeToAct().Sub(a.TimeToAct())
			want := time.Duration(float64(bareInterval) * (1 + m.Seconds()))
			if d := got - want; d < -time.Microsecond || d > time.Microsecond {
				t.Fatalf("interval %v, want %v (bare %v x (1 + %v))", got, want, bareInterval, m)
			}
			// Every window of 1 s + margin holds at most PerSecond().
			var sent []time.Time
			now := at.Add(time.Second)
			for range 400 {
				r := lim.ReserveN(now, 1)
				sent = append(sent, r.TimeToAct())
				now = r.TimeToAct()
			}
			if n := maxInWindow(sent, time.Second+m); n > lim.PerSecond() {
				t.Fatalf("%d sends in a window of 1 s + %v, limit %d", n, m, lim.PerSecond())
			}
		})
	}
}

// TestLooserFiguresWaitForTheirSecond: when lateness falls, the tolerance
// falls at once but the margin only once the slots handed out under it
// and their second have passed; when it rises, the margin rises at once
// and the tolerance only after them.
func TestLooserFiguresWaitForTheirSecond(t *testing.T) {
	t.Parallel()
	lim := throughput.New(80)
	feed := func(from time.Time, check time.Duration) time.Time {
		for i := range 256 {
			slot := from.Add(time.Duration(i) * 13 * time.Millisecond)
			lim.ObserveSend(slot, slot.Add(check), slot.Add(check))
		}
		return from.Add(256 * 13 * time.Millisecond)
	}
	now := feed(t0, 20*time.Millisecond)
	if lim.Margin() == 0 {
		t.Fatal("no margin after 20 ms of lateness")
	}
	last := lim.ReserveN(now, 1).TimeToAct() // a slot under the high margin
	high := lim.Margin()
	now = feed(now, 0)
	if lim.Tolerance() > 7*time.Millisecond {
		t.Fatalf("tolerance %v after lateness fell, want half an interval at once", lim.Tolerance())
	}
	if now.Before(last.Add(time.Second)) && lim.Margin() != high {
		t.Fatalf("margin fell to %v before the slot at +%v had its second", lim.Margin(), last.Sub(t0))
	}
	feed(last.Add(2*time.Second), 0)
	if lim.Margin() != 0 {
		t.Fatalf("margin %v long after lateness fell, want 0", lim.Margin())
	}
}

// TestSharedStoreKeepsTheTolerance: Limiters sharing a store cannot see
// each other's figures, so each keeps the tolerance at half an interval
// (later checks take new slots) and the margin covers only the write.
func TestSharedStoreKeepsTheTolerance(t *testing.T) {
	t.Parallel()
	lim := throughput.New(80, throughput.WithStore(throughput.NewMemoryStore(nil), "n"))
	for i := range 256 {
		slot := t0.Add(time.Duration(i) * 13 * time.Millisecond)
		checked := slot.Add(20 * time.Millisecond)
		lim.ObserveSend(slot, checked, checked.Add(2*time.Millisecond))
	}
	if tol := lim.Tolerance(); tol > 7*time.Millisecond {
		t.Errorf("tolerance %v with a shared store, want half an interval", tol)
	}
	if m := lim.Margin(); m != 2*time.Millisecond {
		t.Errorf("margin %v, want the write's 2 ms", m)
	}
}
