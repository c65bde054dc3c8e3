package throughput_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/internal/slotmoves"
	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// moving and moved are the hooks of internal/slotmoves.
var (
	moving = slotmoves.Option.(func() throughput.Option)
	moved  = slotmoves.Moved.(func(throughput.Reservation) <-chan struct{})
)

// TestMovedReservation: the move channel is nil for a Limiter whose
// reservations do not move; with moving reservations (the cloudapi
// Client's limiters) it closes at SetMPSAt, TimeToAct
// then gives the moved instant, and giving back the latest moved
// reservation is still exact.
func TestMovedReservation(t *testing.T) {
	t.Parallel()
	if moved(throughput.New(80).ReserveN(t0, 1)) != nil {
		t.Error("a reservation that cannot move has a move channel")
	}
	lim := throughput.New(80, moving())
	var rs []throughput.Reservation
	for range 81 {
		rs = append(rs, lim.ReserveN(t0, 1))
	}
	last := rs[80]
	ch := moved(last)
	before := last.TimeToAct()
	select {
	case <-ch:
		t.Fatal("the move channel closed before SetMPSAt")
	default:
	}
	if err := lim.SetMPSAt(t0, throughput.Upgraded); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("the move channel not closed by SetMPSAt")
	}
	after := last.TimeToAct()
	if !after.Before(before) || after.Sub(t0) > 100*time.Millisecond {
		t.Errorf("the 81st slot moved from +%v to +%v, want within 100 ms at 1,000 msg/s", before.Sub(t0), after.Sub(t0))
	}
	if d := last.DelayFrom(t0); d != after.Sub(t0) {
		t.Errorf("DelayFrom %v, TimeToAct +%v", d, after.Sub(t0))
	}
	last.CancelAt(t0)
	if again := lim.ReserveN(t0, 1).TimeToAct(); !again.Equal(after) {
		t.Errorf("after giving back the latest slot (+%v) the next is at +%v", after.Sub(t0), again.Sub(t0))
	}
}

// TestWaitNFollowsMoves: a WaitN queued behind 80 sends at 80 msg/s (a
// second) returns within 100 ms once the figure is raised to 1,000 after
// 10 ms; one queued at 1,000 msg/s waits longer after a cut to 80.
func TestWaitNFollowsMoves(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := clock.New()
		start := time.Now()
		lim := throughput.New(80, throughput.WithClock(c), moving())
		for range 80 {
			lim.ReserveN(start, 1)
		}
		go func() {
			time.Sleep(10 * time.Millisecond)
			_ = lim.SetMPSAt(time.Now(), throughput.Upgraded)
		}()
		if err := lim.WaitN(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 100*time.Millisecond {
			t.Errorf("WaitN returned after %v, want within 100 ms of the raise", took)
		}
		start = time.Now()
		for range 100 {
			lim.ReserveN(start, 1)
		}
		go func() {
			time.Sleep(10 * time.Millisecond)
			_ = lim.SetMPSAt(time.Now(), throughput.Default)
		}()
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		if err := lim.WaitN(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < time.Second {
			t.Errorf("WaitN returned after %v, want over a second at 80 msg/s behind 100 sends", took)
		}
	})
}

// TestWaitNWithAStoreReservesAgainAfterACut: two Limiters sharing a
// Store, 3,000 WaitN callers queued at 1,000 msg/s, both cut to 80 after
// 100 ms. A Store cannot move the slots it handed out: the waiters made
// stale by the cut give theirs back and reserve again at 80 msg/s, so
// that every second from a second after the cut holds at most 80 of the
// instants WaitN returned at.
func TestWaitNWithAStoreReservesAgainAfterACut(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := clock.New()
		st := throughputstore.NewMemoryStore(c)
		lims := []*throughput.Limiter{
			throughput.New(throughput.Upgraded, throughput.WithClock(c), throughput.WithStore(st, "n")),
			throughput.New(throughput.Upgraded, throughput.WithClock(c), throughput.WithStore(st, "n")),
		}
		start := time.Now()
		go func() {
			time.Sleep(100 * time.Millisecond)
			for _, l := range lims {
				_ = l.SetMPSAt(time.Now(), throughput.Default)
			}
		}()
		var mu sync.Mutex
		var at []time.Time
		var wg sync.WaitGroup
		for i := range 3000 {
			wg.Go(func() {
				if err := lims[i%2].WaitN(t.Context(), 1); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				at = append(at, time.Now())
				mu.Unlock()
			})
		}
		wg.Wait()
		slices.SortFunc(at, time.Time.Compare)
		from := start.Add(1100 * time.Millisecond)
		for i, a := range at {
			if a.Before(from) {
				continue
			}
			j := i
			for j < len(at) && !at[j].After(a.Add(time.Second)) {
				j++
			}
			if j-i > throughput.Default {
				t.Fatalf("%d returns in the second from +%v, a second or more after the cut to 80", j-i, a.Sub(start))
			}
		}
	})
}
