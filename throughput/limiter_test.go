package throughput_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/clocktest"
	"github.com/wapace/wapace/throughput"
	"go.uber.org/goleak"
	"pgregory.net/rapid"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// maxInWindow returns the most instants of sorted that fall in any closed
// window [s, s+w]. The maximum is reached by a window starting at an instant.
func maxInWindow(sorted []time.Time, w time.Duration) int {
	best, j := 0, 0
	for i := range sorted {
		for j < len(sorted) && !sorted[j].After(sorted[i].Add(w)) {
			j++
		}
		best = max(best, j-i)
	}
	return best
}

// schedule reserves n single sends, asked at instants produced by ask, and
// returns when each goes, sorted.
func schedule(lim *throughput.Limiter, n int, ask func(i int) time.Time) []time.Time {
	out := make([]time.Time, 0, n)
	for i := range n {
		r := lim.ReserveN(ask(i), 1)
		if !r.OK() {
			panic("reservation not OK")
		}
		out = append(out, r.TimeToAct())
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Before(out[b]) })
	return out
}

func TestEveryWindow(t *testing.T) {
	t.Parallel()
	for _, mps := range []int{throughput.Default, throughput.Upgraded, throughput.Coexistence} {
		for _, headroom := range []float64{0, 0.2} {
			for _, arrival := range []string{"all at once", "random"} {
				t.Run(fmt.Sprintf("%d mps headroom %v %s", mps, headroom, arrival), func(t *testing.T) {
					t.Parallel()
					lim := throughput.New(mps, throughput.WithHeadroom(headroom))
					limit := int(float64(mps) * (1 - headroom))
					if got := lim.PerSecond(); got != limit {
						t.Fatalf("PerSecond = %d, want %d", got, limit)
					}
					rng := rand.New(rand.NewPCG(uint64(mps), 7))
					now := t0
					ask := func(int) time.Time { return t0 }
					if arrival == "random" {
						// Arrivals faster than the limit on average, in clumps.
						ask = func(int) time.Time {
							now = now.Add(time.Duration(rng.ExpFloat64() * float64(time.Second) / float64(2*mps)))
							return now
						}
					}
					const sends = 10_000
					at := schedule(lim, sends, ask)
					if got := maxInWindow(at, time.Second); got > limit {
						t.Errorf("a 1 s window admitted %d sends, limit %d", got, limit)
					}
					// At least 95 % for figures of 20 and up; below that the
					// bucket's burst of 1 costs one send a second.
					floor := 0.95 * float64(limit)
					if limit < 20 {
						floor = float64(limit - 1)
					}
					span := at[len(at)-1].Sub(at[0]).Seconds()
					if rate := float64(sends-1) / span; rate < floor {
						t.Errorf("sustained rate %.2f/s, want at least %.2f", rate, floor)
					}
				})
			}
		}
	}
}

func TestSetMPSAtMidSchedule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ from, to int }{{throughput.Default, throughput.Upgraded}, {throughput.Upgraded, throughput.Coexistence}} {
		t.Run(fmt.Sprintf("%d to %d", tc.from, tc.to), func(t *testing.T) {
			t.Parallel()
			lim := throughput.New(tc.from)
			change := t0.Add(5 * time.Second)
			changed := false
			var at []time.Time
			now := t0
			for len(at) < 10_000 {
				if !changed && !now.Before(change) {
					lim.SetMPSAt(now, tc.to)
					changed = true
				}
				r := lim.ReserveN(now, 1)
				now = r.TimeToAct()
				at = append(at, now)
			}
			var before, after []time.Time
			for _, x := range at {
				if x.Before(change) {
					before = append(before, x)
				}
				if !x.Before(change.Add(time.Second)) {
					after = append(after, x)
				}
			}
			if got := maxInWindow(before, time.Second); got > tc.from {
				t.Errorf("before the change a window admitted %d, limit %d", got, tc.from)
			}
			if got := maxInWindow(after, time.Second); got > tc.to {
				t.Errorf("after the change a window admitted %d, limit %d", got, tc.to)
			}
			if got := maxInWindow(at, time.Second); got > max(tc.from, tc.to) {
				t.Errorf("a window across the change admitted %d", got)
			}
			if lim.PerSecond() != tc.to {
				t.Errorf("MPS = %d, want %d", lim.PerSecond(), tc.to)
			}
		})
	}
}

func TestRefusedHoldsOnlyThatNumber(t *testing.T) {
	t.Parallel()
	held := throughput.New(throughput.Default, throughput.WithAdaptiveRate(false))
	other := throughput.New(throughput.Default)
	now := t0
	var holds []time.Duration
	for range 6 {
		h := refused(held, now, errcodes.ThroughputLimit)
		holds = append(holds, h)
		if got := held.ReserveN(now, 1).TimeToAct(); got.Before(now.Add(h)) {
			t.Errorf("held number admitted a send at %v, before the hold ends at %v", got, now.Add(h))
		}
		if held.AllowN(now, 1) {
			t.Error("AllowN admitted a send during a hold")
		}
		now = now.Add(h + time.Second) // after the event's tail: refusals that keep coming
	}
	s := time.Second
	if diff := cmp.Diff([]time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s}, holds); diff != "" {
		t.Errorf("130429 holds (-want +got):\n%s", diff)
	}
	if !other.AllowN(t0, 1) {
		t.Error("another number was held by this number's 130429")
	}
	held.Accepted(now)
	if h := refused(held, now, errcodes.ThroughputLimit); h != time.Second {
		t.Errorf("after a success the hold is %v, want 1s", h)
	}

	maint := throughput.New(throughput.Default)
	now = t0
	holds = nil
	for _, code := range []errcodes.Code{errcodes.Maintenance, errcodes.Maintenance, errcodes.MaintenanceMode, errcodes.Maintenance, errcodes.Maintenance} {
		h := refused(maint, now, code)
		holds = append(holds, h)
		now = now.Add(h)
	}
	// 131057 polls after 10, 20 and 40 s, then every minute; 2494100 holds
	// for its own 2 min (errcodes' wait for it: "a few minutes"), counting
	// as one more consecutive maintenance refusal.
	if diff := cmp.Diff([]time.Duration{10 * s, 20 * s, 2 * time.Minute, 60 * s, 60 * s}, holds); diff != "" {
		t.Errorf("131057 holds (-want +got):\n%s", diff)
	}
	if !maint.HeldUntil().Equal(now) {
		t.Errorf("HeldUntil = %v, want %v", maint.HeldUntil(), now)
	}
	if refused(maint, now, errcodes.PairRateLimit) != 0 || refused(maint, now, errcodes.InvalidParameter) != 0 {
		t.Error("a code that is not the number's held the number")
	}
}

func TestAdaptiveRateCutsAndRecovers(t *testing.T) {
	t.Parallel()
	rateOver := func(lim *throughput.Limiter, from time.Time, d time.Duration) float64 {
		now, n := from, 0
		for {
			r := lim.ReserveN(now, 1)
			if r.TimeToAct().After(from.Add(d)) {
				r.CancelAt(now)
				return float64(n) / d.Seconds()
			}
			now = r.TimeToAct()
			n++
		}
	}
	lim := throughput.New(throughput.Default)
	full := rateOver(lim, t0, 10*time.Second)
	hold := refused(lim, t0.Add(10*time.Second), errcodes.ThroughputLimit)
	start := t0.Add(10*time.Second + hold)
	same := rateOver(lim, start, 2*time.Second)
	if same < 0.99*full {
		t.Errorf("rate after one 130429 event = %.1f/s, want the same rate %.1f", same, full)
	}
	// Refusals keep coming: a second event within 10 s of the first.
	start = start.Add(2 * time.Second)
	hold = refused(lim, start, errcodes.ThroughputLimit)
	start = start.Add(hold)
	cut := rateOver(lim, start, 5*time.Second)
	later := rateOver(lim, start.Add(2*time.Minute), 10*time.Second)
	if !(cut < 0.8*full) {
		t.Errorf("rate after a second 130429 event = %.1f/s, want about 3/4 of %.1f", cut, full)
	}
	if later < 0.95*full {
		t.Errorf("rate two minutes later = %.1f/s, want recovered to %.1f", later, full)
	}
}

func TestWaitSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := throughput.New(throughput.Coexistence) // burst 1, 19/s
		start := time.Now()
		for range 20 {
			if err := lim.Wait(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		// The bucket counts whole nanoseconds: 1 s / 19 rounds down.
		if got, want := time.Since(start), 19*time.Second/19; got > want || got < want-time.Microsecond {
			t.Errorf("20 sends took %v, want %v", got, want)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel()
		refused(lim, time.Now(), errcodes.Maintenance)
		before := time.Now()
		if err := lim.Wait(ctx); !errors.Is(err, backoff.ErrDeadline) || time.Since(before) != 0 {
			t.Fatalf("Wait during maintenance = %v after %v, want ErrDeadline at once", err, time.Since(before))
		}
		if err := lim.WaitN(t.Context(), 2); !errors.Is(err, throughput.ErrBurstTooLarge) {
			t.Errorf("WaitN(2) with burst 1 = %v", err)
		}
		// Cancelled mid-wait, the reservation is given back: the next one
		// goes right when the hold ends.
		ctx2, cancel2 := context.WithCancel(t.Context())
		go func() { time.Sleep(time.Second); cancel2() }()
		if err := lim.Wait(ctx2); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait = %v, want Canceled", err)
		}
		if d := lim.Reserve().Delay(); d != 9*time.Second {
			t.Errorf("after cancel the next send waits %v, want 9s", d)
		}
	})
}

func TestWaitMockClock(t *testing.T) {
	t.Parallel()
	clk := clocktest.New()
	lim := throughput.New(throughput.Coexistence, throughput.WithClock(clk))
	start := clk.Now()
	clk.Run(func() {
		for range 39 {
			if err := lim.Wait(t.Context()); err != nil {
				t.Error(err)
			}
		}
	})
	if got := clk.Now().Sub(start); got > 2*time.Second || got < 2*time.Second-time.Microsecond {
		t.Errorf("39 sends at 19/s plus a burst of 1 took %v, want 2s", got)
	}
}

func TestReservationNotOK(t *testing.T) {
	t.Parallel()
	lim := throughput.New(throughput.Default) // burst 1
	for _, n := range []int{0, -1, 2} {
		r := lim.ReserveN(t0, n)
		if r.OK() || !r.TimeToAct().IsZero() || r.DelayFrom(t0) != time.Duration(1<<63-1) {
			t.Errorf("ReserveN(%d) OK=%v", n, r.OK())
		}
		r.CancelAt(t0)
		r.Cancel()
	}
	if got := throughput.New(0).PerSecond(); got != throughput.Default {
		t.Errorf("New(0).PerSecond() = %d", got)
	}
	if got := throughput.New(1).PerSecond(); got != 1 {
		t.Errorf("New(1).PerSecond() = %d", got)
	}
}

// TestPropertyOutOfOrderInstants: rate.Limiter assumes instants never go
// back; fed out-of-order instants and cancellations (concurrent callers,
// holds in the future), it would credit the same refill twice. The Limiter
// keeps its guarantee whatever order the instants come in.
func TestPropertyOutOfOrderInstants(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		lim := throughput.New(throughput.Coexistence)
		type kept struct {
			r         throughput.Reservation
			cancelled bool
		}
		var all []*kept
		now := t0
		for range rapid.IntRange(1, 300).Draw(t, "ops") {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(200*time.Millisecond)).Draw(t, "advance")))
			asked := now.Add(-time.Duration(rapid.Int64Range(0, int64(2*time.Second)).Draw(t, "skew")))
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0:
				if len(all) > 0 {
					k := all[rapid.IntRange(0, len(all)-1).Draw(t, "which")]
					if !k.cancelled && k.r.TimeToAct().After(now) {
						k.r.CancelAt(asked)
						k.cancelled = true
					}
				}
			case 1:
				refused(lim, asked, errcodes.ThroughputLimit)
			default:
				all = append(all, &kept{r: lim.ReserveN(asked, 1)})
			}
		}
		var at []time.Time
		for _, k := range all {
			if !k.cancelled {
				at = append(at, k.r.TimeToAct())
			}
		}
		sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
		if got := maxInWindow(at, time.Second); got > throughput.Coexistence {
			t.Fatalf("a 1 s window admitted %d sends, limit %d", got, throughput.Coexistence)
		}
	})
}
