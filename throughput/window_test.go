package throughput

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// letAt lets a write asked at t through w, failing the test if it may not.
func letAt(t *testing.T, w *window, at int64) *windowTicket {
	t.Helper()
	k, wait := w.let(at)
	if k == nil {
		t.Fatalf("let at %v: refused, wait %v", time.Duration(at), wait)
	}
	return k
}

// The window's decisions, one scenario per row: a limit of 3, writes let
// and reported at the instants given (ms), then one more asked at ask.
func TestWindowDecides(t *testing.T) {
	ms := func(v int64) int64 { return v * int64(time.Millisecond) }
	span := windowSpan
	for _, tt := range []struct {
		name    string
		wrote   []int64 // let at each instant and reported written at it
		pending int     // let at 0 after them, not reported
		dropped int     // let at 0 after them, then dropped
		ask     int64
		want    time.Duration // 0: let through
	}{
		{name: "empty", ask: 0},
		{name: "room", wrote: []int64{0, 10}, ask: 20},
		{name: "full: the oldest must leave", wrote: []int64{0, 10, 20}, ask: ms(30), want: span + 1 - time.Duration(ms(30))},
		{name: "the oldest left", wrote: []int64{0, 10, 20}, ask: int64(span) + 1},
		{name: "exactly a span after the oldest: still in", wrote: []int64{0, 10, 20}, ask: int64(span), want: 1},
		{name: "pending count", wrote: []int64{0}, pending: 2, ask: ms(5), want: span + 1 - time.Duration(ms(5))},
		{name: "all pending: no instant known", pending: 3, ask: ms(5), want: time.Second / 3},
		{name: "dropped writes free their room", wrote: []int64{0}, dropped: 2, ask: ms(5)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &window{}
			w.setLimit(3)
			for _, at := range tt.wrote {
				letAt(t, w, at).Wrote(time.Unix(0, at))
			}
			for range tt.pending {
				letAt(t, w, 0)
			}
			for range tt.dropped {
				letAt(t, w, 0).Drop()
			}
			k, wait := w.let(tt.ask)
			if (k != nil) != (tt.want == 0) || wait != tt.want {
				t.Errorf("let at %v: ticket %v, wait %v; want a ticket %v, wait %v", time.Duration(tt.ask), k != nil, wait, tt.want == 0, tt.want)
			}
		})
	}
}

// A ticket counts once: Wrote after Drop (or twice) changes nothing.
func TestWindowTicketCountsOnce(t *testing.T) {
	w := &window{}
	w.setLimit(2)
	k := letAt(t, w, 0)
	k.Drop()
	k.Wrote(time.Unix(0, 0))
	k.Drop()
	letAt(t, w, 0).Wrote(time.Unix(0, 0))
	letAt(t, w, 0)
	if w.pending != 1 || w.n != 1 {
		t.Errorf("pending %d, written %d; want 1 and 1", w.pending, w.n)
	}
}

// A write reported before it was let through counts from when it was
// let: an instant is never counted earlier than the decision.
func TestWindowCountsAWriteFromItsLetAtLeast(t *testing.T) {
	w := &window{}
	w.setLimit(1)
	letAt(t, w, int64(time.Second)).Wrote(time.Unix(0, 0))
	if _, wait := w.let(int64(time.Second) + 1); wait != windowSpan {
		t.Errorf("wait %v, want %v (the write counted from its let, 1 s)", wait, windowSpan)
	}
}

// A cut keeps every instant, and holds the writes until enough have
// left (8 of 10, for the 3 the cut allows); a raise lets more through
// while the instants held and the writes pending are fewer than it.
func TestWindowFollowsTheLimit(t *testing.T) {
	w := &window{}
	w.setLimit(10)
	for i := range 10 {
		letAt(t, w, int64(i)).Wrote(time.Unix(0, int64(i)))
	}
	w.setLimit(3)
	k, wait := w.let(20)
	if k != nil || wait != windowSpan+1+7-20 {
		t.Errorf("after a cut to 3: ticket %v, wait %v; want none until the 8th of the 10 held leaves (%v)", k != nil, wait, windowSpan+1+7-20)
	}
	w.setLimit(12)
	letAt(t, w, 20)
	letAt(t, w, 21)
	if k, _ := w.let(22); k != nil {
		t.Error("after a raise to 12 with 10 held and 2 pending: let a 13th through")
	}
}

// written is one write the property test reported: its instant, and the
// window's limit when it was let through.
type written struct {
	at    int64
	limit int
}

// windowModel is the window's promise, checked on the writes alone: any
// span of windowSpan (closed) holds at most as many as the highest limit
// in force when one of them was let through (the limit of the last let,
// which counted all the others).
func windowModel(ws []written) (at int64, most, limit int) {
	s := slices.Clone(ws)
	slices.SortFunc(s, func(a, b written) int { return cmp.Compare(a.at, b.at) })
	for j := range s {
		hi := 0
		for i := j; i < len(s) && s[i].at-s[j].at <= int64(windowSpan); i++ {
			hi = max(hi, s[i].limit)
			if n := i - j + 1; n > hi && n-hi > most-limit {
				at, most, limit = s[j].at, n, hi
			}
		}
	}
	return at, most, limit
}

// Any sequence of lets, reports, drops and changes of the limit (cuts
// and raises), the lets asked at instants a little before the present and
// out of order (callers read the time before they lock), with writes
// reported in any order at the present or up to 50 ms later, which then
// becomes the present (a write happens after its let, and after any let
// before it; a report reads the time): no span holds more writes than
// the highest limit any of them was let under; a refusal names a wait
// after which, with nothing else done, the write is let through (unless
// the writes pending alone fill the limit); and the pending count is what
// the model says.
func TestWindowPropertyNoSpanOverTheLimit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(1, 8).Draw(t, "limit")
		w := &window{}
		w.setLimit(limit)
		var (
			now  int64
			open []*windowTicket
			lets []int64 // of the open tickets
			lims []int   // the limit each open ticket was let under
			done []written
		)
		step := rapid.Int64Range(0, int64(60*time.Millisecond))
		for range rapid.IntRange(1, 150).Draw(t, "ops") {
			now += step.Draw(t, "advance")
			switch op := rapid.IntRange(0, 4).Draw(t, "op"); {
			case op <= 1: // let, at an instant read a little before
				at := now - rapid.Int64Range(0, int64(30*time.Millisecond)).Draw(t, "skew")
				k, wait := w.let(at)
				if k == nil {
					if wait <= 0 {
						t.Fatalf("refused with wait %v", wait)
					}
					if len(open) < limit {
						// Not every write held is pending: the wait ends
						// when enough have left.
						now = max(now, at+int64(wait))
						if k2, wait2 := w.let(now); k2 == nil {
							t.Fatalf("refused at %v, wait %v; refused again after it (wait %v), with %d pending of %d", time.Duration(at), wait, wait2, len(open), limit)
						} else {
							open, lets, lims = append(open, k2), append(lets, now), append(lims, limit)
						}
					}
					continue
				}
				open, lets, lims = append(open, k), append(lets, at), append(lims, limit)
			case op == 2 && len(open) > 0: // a report, of any open ticket, from now on
				i := rapid.IntRange(0, len(open)-1).Draw(t, "which")
				wt := now + rapid.Int64Range(0, int64(50*time.Millisecond)).Draw(t, "late")
				open[i].Wrote(time.Unix(0, wt))
				now = wt // a report reads the present: nothing after it is earlier
				done = append(done, written{wt, lims[i]})
				open, lets, lims = slices.Delete(open, i, i+1), slices.Delete(lets, i, i+1), slices.Delete(lims, i, i+1)
			case op == 3 && len(open) > 0:
				i := rapid.IntRange(0, len(open)-1).Draw(t, "which")
				open[i].Drop()
				open, lets, lims = slices.Delete(open, i, i+1), slices.Delete(lets, i, i+1), slices.Delete(lims, i, i+1)
			case op == 4: // a cut or a raise (SetMPSAt)
				limit = rapid.IntRange(1, 8).Draw(t, "new limit")
				w.setLimit(limit)
			}
			if w.pending != len(open) {
				t.Fatalf("pending %d, want %d", w.pending, len(open))
			}
		}
		if at, most, lim := windowModel(done); most > lim {
			t.Fatalf("%d writes in the span from %v, let under limits of %d at most: %v", most, time.Duration(at), lim, done)
		}
	})
}

// Writes refused by a full window are told instants a second's share
// apart, even when the instants they wait for leave together (a bunch
// after a stall), and the first goes at its instant.
func TestWindowSpacesTheWritesItRefuses(t *testing.T) {
	w := &window{}
	w.setLimit(4)
	for range 4 {
		letAt(t, w, 0).Wrote(time.Unix(0, 0)) // a bunch
	}
	spacing := time.Second / 4
	var told []time.Duration
	for range 3 {
		k, wait := w.let(10)
		if k != nil {
			t.Fatal("a full window let a write through")
		}
		told = append(told, wait+10)
	}
	want := []time.Duration{windowSpan + 1, windowSpan + 1 + spacing, windowSpan + 1 + 2*spacing}
	if !slices.Equal(told, want) {
		t.Errorf("told %v, want %v", told, want)
	}
	if k, _ := w.let(int64(told[0])); k == nil {
		t.Error("the first waiter, at its instant, refused")
	}
}
