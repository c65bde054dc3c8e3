package throughput_test

import (
	"slices"
	"testing"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/throughputstore"
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
		holds = append(holds, refused(lim, t0.Add(time.Duration(i)*40*time.Millisecond), errcodes.ThroughputLimit))
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
		if h := refused(lim, now, errcodes.ThroughputLimit); h != want {
			t.Fatalf("hold %v, want %v", h, want)
		}
		if h := refused(lim, now.Add(time.Millisecond), errcodes.ThroughputLimit); h != want-time.Millisecond {
			t.Fatalf("a refusal of the same event returned %v", h)
		}
		// Met at the hold's end: the same event, one interval.
		if h := refused(lim, now.Add(want), errcodes.ThroughputLimit); h <= 0 || h > 13*time.Millisecond {
			t.Fatalf("a refusal at the hold's end returned %v, want one interval", h)
		}
		now = now.Add(want + time.Second) // refusals that keep coming
	}
	lim.Accepted(now)
	if h := refused(lim, now, errcodes.ThroughputLimit); h != time.Second {
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
		// Every check an hour late: a tolerance below it would give
		// every slot back and send nothing; the margin covers it (an
		// hour less half an interval), beyond 250 ms: a rate of 1/3,600
		// of the figure, not none. The write's hour is paused instead.
		{"absurd", nil, time.Hour, time.Hour, time.Hour - 7*time.Millisecond, time.Hour, time.Hour},
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
			if d, eps := got-want, max(time.Microsecond, want/1_000_000); d < -eps || d > eps {
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

// TestLooserFiguresWaitForTheirSecond: when lateness rises, the margin
// rises at once and the tolerance only once the slots handed out before
// have had their second, and then only to the tolerance first wanted (the
// one the margin raised then covers); when lateness falls, the tolerance
// stays (the margin in force still covers it) until the margin may fall,
// once the slots handed out under it have had their second, and both fall
// together.
func TestLooserFiguresWaitForTheirSecond(t *testing.T) {
	t.Parallel()
	const least = 5 * time.Millisecond
	lim := throughput.New(throughput.Upgraded)
	if tol, m := lim.Tolerance(), lim.Margin(); tol != least || m != least {
		t.Fatalf("a new Limiter at 1,000 msg/s: tolerance %v, margin %v; want 5 ms and 5 ms", tol, m)
	}
	// feed observes n sends from from, 1 ms apart, checked and written
	// late by late, and returns the instant after the last.
	feed := func(from time.Time, n int, late time.Duration) time.Time {
		for i := range n {
			slot := from.Add(time.Duration(i) * time.Millisecond)
			lim.ObserveSend(slot, slot.Add(late), slot.Add(late))
		}
		return from.Add(time.Duration(n) * time.Millisecond)
	}
	last := lim.ReserveN(t0, 1).TimeToAct() // a slot under the 5 ms margin
	now := feed(t0, 256, 20*time.Millisecond)
	if m := lim.Margin(); m < 20*time.Millisecond {
		t.Fatalf("margin %v after 20 ms of lateness, want at least 20 ms at once", m)
	}
	if tol := lim.Tolerance(); tol != least {
		t.Fatalf("tolerance %v before the slot at +%v had its second, want 5 ms", tol, last.Sub(t0))
	}
	feed(now, 256, 60*time.Millisecond) // later still, before the rise applies
	if m := lim.Margin(); m < 60*time.Millisecond {
		t.Fatalf("margin %v after 60 ms of lateness, want at least 60 ms at once", m)
	}
	last = lim.ReserveN(last.Add(time.Second), 1).TimeToAct() // a slot under the 60 ms margin
	now = feed(t0.Add(time.Second), 32, 60*time.Millisecond)
	if tol := lim.Tolerance(); tol != 20*time.Millisecond {
		t.Fatalf("tolerance %v once the first slot had its second, want the 20 ms first wanted", tol)
	}
	feed(now, 256, 60*time.Millisecond)
	if tol := lim.Tolerance(); tol != 20*time.Millisecond {
		t.Fatalf("tolerance %v before the slot at +%v had its second, want 20 ms", tol, last.Sub(t0))
	}
	now = feed(last.Add(time.Second), 64, 60*time.Millisecond)
	high, highTol := lim.Margin(), lim.Tolerance()
	if highTol != 60*time.Millisecond {
		t.Fatalf("tolerance %v once the second slot had its second, want 60 ms", highTol)
	}
	// Lateness falls: nothing falls until the slots handed out under the
	// high margin have had their second.
	last = lim.ReserveN(now, 1).TimeToAct()
	feed(now, 512, 0)
	if m, tol := lim.Margin(), lim.Tolerance(); m != high || tol != highTol {
		t.Fatalf("margin %v, tolerance %v before the slot at +%v had its second, want %v and %v", m, tol, last.Sub(t0), high, highTol)
	}
	feed(last.Add(time.Second), 64, 0)
	if m, tol := lim.Margin(), lim.Tolerance(); m != least || tol != least {
		t.Fatalf("margin %v, tolerance %v long after lateness fell, want 5 ms and 5 ms", m, tol)
	}
}

// TestLeastTolerance: a new Limiter's tolerance is half an interval, or
// 5 ms when that is longer, and its margin covers the difference (rounded
// up to the millisecond), with a fixed headroom too; with a store (its
// share of the slots unknown yet), it is half an interval and no margin.
// The stretched interval spaces the slots accordingly.
func TestLeastTolerance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mps        int
		opts       []throughput.Option
		tol, margn time.Duration
	}{
		{throughput.Coexistence, nil, 26315789, 0}, // 19/s: half of 52.6 ms
		{throughput.Default, nil, 6329113, 0},
		{100, nil, 5050505, 0},
		{200, nil, 5 * time.Millisecond, 3 * time.Millisecond}, // 5 - 2.5 ms
		{throughput.Upgraded, nil, 5 * time.Millisecond, 5 * time.Millisecond},
		{10_000, nil, 5 * time.Millisecond, 5 * time.Millisecond},
		// A fixed headroom has the same least tolerance (its margin
		// then stays: it does not follow lateness).
		{10_000, []throughput.Option{throughput.WithHeadroom(0)}, 5 * time.Millisecond, 5 * time.Millisecond},
		{throughput.Upgraded, []throughput.Option{throughput.WithHeadroom(0.1)}, 5 * time.Millisecond, 5 * time.Millisecond},
		{throughput.Default, []throughput.Option{throughput.WithHeadroom(0.1)}, 7042253, 0}, // 71/s: half of 14.08 ms
		// With a store the share of the slots is unknown until sends are
		// observed: half an interval, no margin.
		{throughput.Upgraded, []throughput.Option{throughput.WithStore(throughputstore.NewMemoryStore(nil), "n")}, 505050, 0},
	} {
		lim := throughput.New(tc.mps, tc.opts...)
		if tol, m := lim.Tolerance(), lim.Margin(); tol != tc.tol || m != tc.margn {
			t.Errorf("New(%d): tolerance %v, margin %v; want %v, %v", tc.mps, tol, m, tc.tol, tc.margn)
		}
		// Saturated, every window of 1 s + margin holds at most PerSecond().
		var at []time.Time
		for range 3 * tc.mps {
			at = append(at, lim.ReserveN(t0, 1).TimeToAct())
		}
		if n := maxInWindow(at, time.Second+lim.Margin()); n > lim.PerSecond() {
			t.Errorf("New(%d): %d slots in a window of 1 s + %v, limit %d", tc.mps, n, lim.Margin(), lim.PerSecond())
		}
	}
}

// TestSharedStoreStretchesByShare: Limiters sharing a store cannot see
// each other's figures. One that takes a third of the slots and sends 20 ms
// late stretches its own slots by three times the margin it would need
// alone, and the number stays within its figure at Meta next to two
// Limiters sending on time with no margin: in every closed second of
// arrivals (slot + lateness), at most PerSecond() sends.
func TestSharedStoreStretchesByShare(t *testing.T) {
	t.Parallel()
	const check, write = 20 * time.Millisecond, 2 * time.Millisecond
	feed := func(lim *throughput.Limiter, spacing, check time.Duration) {
		for i := range 256 {
			slot := t0.Add(time.Duration(i) * spacing)
			lim.ObserveSend(slot, slot.Add(check), slot.Add(check+write))
		}
	}
	alone := throughput.New(80)
	feed(alone, 13*time.Millisecond, check)
	store := throughputstore.NewMemoryStore(nil)
	var lims []*throughput.Limiter
	for range 3 {
		lims = append(lims, throughput.New(80, throughput.WithStore(store, "n")))
	}
	feed(lims[0], 3*13*time.Millisecond, check) // a third of the slots, late
	feed(lims[1], 3*13*time.Millisecond, 0)
	feed(lims[2], 3*13*time.Millisecond, 0)
	late, m := lims[0].Tolerance(), lims[0].Margin()
	if ma := alone.Margin(); m < 2*ma || m > 4*ma {
		t.Fatalf("margin %v with a third of the slots, want about three times %v (alone)", m, ma)
	}
	if late < check {
		t.Fatalf("tolerance %v, want the 20 ms checks let through", late)
	}
	if m1 := lims[1].Margin(); m1 < 6*time.Millisecond || m1 > 8*time.Millisecond {
		t.Fatalf("a Limiter checking on time has margin %v, want its 2 ms writes times three", m1)
	}
	var arrived []time.Time
	now := t0.Add(time.Hour)
	for i := range 600 {
		k := i % 3
		r := lims[k].ReserveN(now, 1)
		if !r.OK() {
			t.Fatal(r.Err())
		}
		at := r.TimeToAct()
		if k == 0 {
			at = at.Add(late + write) // as late as its figures let it be
		}
		arrived = append(arrived, at)
	}
	slices.SortFunc(arrived, func(a, b time.Time) int { return a.Compare(b) })
	if n := maxInWindow(arrived, time.Second); n > lims[0].PerSecond() {
		t.Fatalf("%d arrivals in a closed second, limit %d (margin %v, tolerance %v)", n, lims[0].PerSecond(), m, late)
	}
}

// TestLateWritePausesTheNumber: a write later than its slot by more than
// the margin covers (half an interval with no margin) holds the number for
// the excess, counting no refusal; one within it holds nothing.
func TestLateWritePausesTheNumber(t *testing.T) {
	t.Parallel()
	lim := throughput.New(80)
	slot := t0
	lim.ObserveSend(slot, slot.Add(time.Millisecond), slot.Add(3*time.Millisecond))
	if h := lim.HeldUntil(); !h.IsZero() {
		t.Fatalf("held until %v after a write within half an interval", h)
	}
	wrote := slot.Add(30 * time.Millisecond)
	lim.ObserveSend(slot, slot.Add(time.Millisecond), wrote)
	over := 30*time.Millisecond - lim.Tolerance() // no margin yet: the tolerance is half an interval
	if h := lim.HeldUntil(); !h.Equal(wrote.Add(over)) {
		t.Fatalf("held until +%v, want the write +%v plus the excess %v", h.Sub(t0), wrote.Sub(t0), over)
	}
	if r := lim.ReserveN(wrote, 1); r.TimeToAct().Before(wrote.Add(over)) {
		t.Fatalf("a send after the late write at +%v, want after the pause", r.TimeToAct().Sub(t0))
	}
}

// TestToleranceCoveredAfterAnUpgrade: a number paced at 80 msg/s
// (tolerance half of 12.7 ms, no margin) upgraded to 1,000 msg/s: at the
// next recomputation the tolerance the margin in force no longer covers
// falls at once (it does not wait for the margin, which rises), to the
// least tolerance, covered by the margin.
func TestToleranceCoveredAfterAnUpgrade(t *testing.T) {
	t.Parallel()
	lim := throughput.New(throughput.Default)
	at := t0
	for range 256 {
		lim.ObserveSend(at, at.Add(time.Millisecond), at.Add(time.Millisecond))
		at = at.Add(13 * time.Millisecond)
	}
	if tol, m := lim.Tolerance(), lim.Margin(); tol != 6329113 || m != 0 {
		t.Fatalf("at 80 msg/s: tolerance %v, margin %v; want half an interval and none", tol, m)
	}
	if err := lim.SetMPSAt(at, throughput.Upgraded); err != nil {
		t.Fatal(err)
	}
	for range 32 {
		lim.ObserveSend(at, at.Add(time.Millisecond), at.Add(time.Millisecond))
		at = at.Add(time.Millisecond)
	}
	if tol, m := lim.Tolerance(), lim.Margin(); tol != 5*time.Millisecond || m != 5*time.Millisecond {
		t.Fatalf("at 1,000 msg/s: tolerance %v, margin %v; want 5 ms and 5 ms", tol, m)
	}
}
