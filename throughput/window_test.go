package throughput

import (
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

// A cut keeps the newest instants, and holds the writes until enough
// have left; a raise lets more through at once.
func TestWindowFollowsTheLimit(t *testing.T) {
	w := &window{}
	w.setLimit(10)
	for i := range 10 {
		letAt(t, w, int64(i)).Wrote(time.Unix(0, int64(i)))
	}
	w.setLimit(3)
	k, wait := w.let(20)
	if k != nil || wait != windowSpan+1+7-20 {
		t.Errorf("after a cut to 3: ticket %v, wait %v; want none until the oldest of the 3 kept leaves (%v)", k != nil, wait, windowSpan+1+7-20)
	}
	w.setLimit(12)
	letAt(t, w, 20)
	if k, _ := w.let(21); k == nil {
		t.Error("after a raise to 12 with 3 kept and 1 pending: refused")
	}
}

// windowModel is the window's promise, checked on the instants written
// alone: any span of windowSpan (closed) holds at most limit of them.
func windowModel(written []int64, limit int) (at int64, most int) {
	s := slices.Clone(written)
	slices.Sort(s)
	j := 0
	for i := range s {
		for s[i]-s[j] > int64(windowSpan) {
			j++
		}
		if n := i - j + 1; n > most {
			most, at = n, s[j]
		}
	}
	return at, most
}

// Any sequence of lets, reports and drops, the lets asked at instants a
// little before the present and out of order (callers read the time
// before they lock), with writes reported in any order at the present or
// later (a write happens after its let, and after any let before it):
// no span holds more than the limit
// of written instants; a refusal names a wait after which, with nothing
// else done, the write is let through (unless every write held is
// pending); and the pending count is what the model says.
func TestWindowPropertyNoSpanOverTheLimit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(1, 8).Draw(t, "limit")
		w := &window{}
		w.setLimit(limit)
		var (
			now     int64
			open    []*windowTicket
			lets    []int64 // of the open tickets
			written []int64
		)
		step := rapid.Int64Range(0, int64(300*time.Millisecond))
		for range rapid.IntRange(1, 120).Draw(t, "ops") {
			now += step.Draw(t, "advance")
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); {
			case op <= 1: // let, at an instant read a little before
				at := now - rapid.Int64Range(0, int64(30*time.Millisecond)).Draw(t, "skew")
				k, wait := w.let(at)
				if k == nil {
					if wait <= 0 {
						t.Fatalf("refused with wait %v", wait)
					}
					if len(open) < limit {
						// Not every write held is pending: the wait ends
						// when one leaves.
						now = max(now, at+int64(wait))
						if k2, wait2 := w.let(now); k2 == nil {
							t.Fatalf("refused at %v, wait %v; refused again after it (wait %v), with %d pending of %d", time.Duration(at), wait, wait2, len(open), limit)
						} else {
							open, lets = append(open, k2), append(lets, now)
						}
					}
					continue
				}
				open, lets = append(open, k), append(lets, at)
			case op == 2 && len(open) > 0: // a report, of any open ticket, from now on
				i := rapid.IntRange(0, len(open)-1).Draw(t, "which")
				wt := now + rapid.Int64Range(0, int64(50*time.Millisecond)).Draw(t, "late")
				open[i].Wrote(time.Unix(0, wt))
				written = append(written, wt)
				open, lets = slices.Delete(open, i, i+1), slices.Delete(lets, i, i+1)
			case op == 3 && len(open) > 0:
				i := rapid.IntRange(0, len(open)-1).Draw(t, "which")
				open[i].Drop()
				open, lets = slices.Delete(open, i, i+1), slices.Delete(lets, i, i+1)
			}
			if w.pending != len(open) {
				t.Fatalf("pending %d, want %d", w.pending, len(open))
			}
		}
		if at, most := windowModel(written, limit); most > limit {
			t.Fatalf("%d writes in the span from %v, limit %d: %v", most, time.Duration(at), limit, written)
		}
	})
}
