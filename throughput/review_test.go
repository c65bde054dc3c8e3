package throughput_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/throughputstore"
	"github.com/wapace/wapace/throughput/usage"
)

// TestAdaptiveRateOutOfOrderKeepsWindows: with the adaptive rate on, 130429
// answers and the recovery that follows never let one closed second hold
// more than PerSecond sends, whatever order the instants arrive in. (It
// failed when a rate change rescaled the bucket's debt from an instant
// asked in the past: the recovery moved TAT seconds early.)
func TestAdaptiveRateOutOfOrderKeepsWindows(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 3))
		mps := []int{1, 2, 3, 5, 20, 80, 1000}[rng.IntN(7)]
		lim := throughput.New(mps)
		var sent []time.Time
		var mine []throughput.Reservation
		now := t0
		for range 400 {
			now = now.Add(time.Duration(rng.Int64N(int64(200 * time.Millisecond))))
			at := now.Add(-time.Duration(rng.Int64N(int64(15 * time.Second))))
			if rng.IntN(3) > 0 {
				at = now
			}
			switch k := rng.IntN(20); {
			case k < 15:
				r := lim.ReserveN(at, 1)
				if !r.OK() {
					t.Fatal(r.Err())
				}
				mine = append(mine, r)
			case k < 17 && len(mine) > 0:
				i := rng.IntN(len(mine))
				mine[i].CancelAt(at)
				mine = slices.Delete(mine, i, i+1)
			case k < 19:
				refused(lim, at, errcodes.ThroughputLimit)
			default:
				lim.Accepted(at)
			}
		}
		for _, r := range mine {
			sent = append(sent, r.TimeToAct())
		}
		slices.SortFunc(sent, func(a, b time.Time) int { return a.Compare(b) })
		if got := maxInWindow(sent, time.Second); got > lim.PerSecond() {
			t.Fatalf("seed %d mps %d: %d sends in one closed second, limit %d", seed, mps, got, lim.PerSecond())
		}
	}
}

// TestZeroValuesAndAbsurdFigures: no method of a zero value panics, and
// absurd figures are clamped.
func TestZeroValuesAndAbsurdFigures(t *testing.T) {
	var l throughput.Limiter
	l.Allow()
	l.ReserveN(t0, 1).CancelAt(t0)
	refused(&l, t0, errcodes.ThroughputLimit)
	l.Accepted(t0)
	_ = l.HeldUntil()
	l.SetMPSAt(t0, math.MaxInt)
	var r throughput.Reservation
	r.Cancel()
	r.CancelAt(t0)
	_ = r.Delay()
	_ = r.DelayFrom(t0)
	_ = r.TimeToAct()
	var tr throughput.Tier
	tr.Admit(t0, "237690000001")
	tr.Claim(t0, "237690000001").Release()
	tr.SetLimit(1)
	c := tr.Claim(t0, "237690000001")
	c.Release()
	c.Release()
	_ = tr.Count(t0)
	var c0 throughput.Claim
	c0.Release()
	var b throughput.Budget
	b.ReserveN(t0, 1)
	// The zero memory store: TestZeroMemoryStoreNeverPanics (internal).
	// absurd figures
	// absurd figures are refused, not clamped (issue 20): every decision
	// fails with ErrInvalidOption and nothing is admitted; no panic.
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 2} {
		l2 := throughput.New(80, throughput.WithHeadroom(f))
		if p := l2.PerSecond(); p < 1 || p > 80 {
			t.Errorf("headroom %v: PerSecond %d", f, p)
		}
		if r := l2.ReserveN(t0, 1); r.OK() || !errors.Is(r.Err(), throughput.ErrInvalidOption) {
			t.Errorf("headroom %v: OK %v, %v", f, r.OK(), r.Err())
		}
	}
	for _, mps := range []int{math.MinInt, -1, 0} { // below 1: Default
		l3 := throughput.New(mps)
		if !l3.ReserveN(t0, 1).OK() {
			t.Errorf("mps %d: not OK", mps)
		}
	}
	if r := throughput.New(math.MaxInt).ReserveN(t0, 1); r.OK() || !errors.Is(r.Err(), throughput.ErrInvalidOption) {
		t.Errorf("mps MaxInt: OK %v, %v", r.OK(), r.Err())
	}
}

// TestUpgradeWithQueuedReservationsKeepsWindows: windows that start a second
// or more after SetMPSAt obey the new figure even when reservations at the
// old rate are queued ahead. (It failed with 1,070 sends in one second:
// the upgrade moved the bucket's TAT back, and new sends were scheduled
// among the queued ones, both rates at once.)
func TestUpgradeWithQueuedReservationsKeepsWindows(t *testing.T) {
	lim := throughput.New(80)
	var sent []time.Time
	for range 800 {
		sent = append(sent, lim.ReserveN(t0, 1).TimeToAct())
	}
	lim.SetMPSAt(t0, 1000)
	for range 2000 {
		sent = append(sent, lim.ReserveN(t0, 1).TimeToAct())
	}
	var after []time.Time
	for _, s := range sent {
		if !s.Before(t0.Add(time.Second)) {
			after = append(after, s)
		}
	}
	slices.SortFunc(after, func(a, b time.Time) int { return a.Compare(b) })
	if got := maxInWindow(after, time.Second); got > lim.PerSecond() {
		t.Fatalf("%d sends in one closed second after the upgrade, limit %d", got, lim.PerSecond())
	}
}

type holdFails struct{ throughputstore.Store }

func (holdFails) Hold(context.Context, string, time.Time) (time.Time, error) {
	return time.Time{}, errors.New("connection refused")
}

// TestHoldKeptLocallyWhenStoreFails: a hold the store could not record is
// kept by the Limiter, as Refused says. (The next send went at once while
// HeldUntil said one second.)
func TestHoldKeptLocallyWhenStoreFails(t *testing.T) {
	lim := throughput.New(80, throughput.WithStore(holdFails{throughputstore.NewMemoryStore(nil)}, "n"))
	hold := refused(lim, t0, errcodes.ThroughputLimit)
	if r := lim.ReserveN(t0, 1); !r.OK() || r.TimeToAct().Before(t0.Add(hold)) {
		t.Fatalf("next send at +%v, during the %v hold (HeldUntil +%v)", r.TimeToAct().Sub(t0), hold, lim.HeldUntil().Sub(t0))
	}
	if lim.AllowN(t0.Add(hold/2), 1) {
		t.Fatal("AllowN admitted during the hold")
	}
}

// TestBudgetHoldKeptLocallyWhenStoreFails: a Budget hold the store could not
// record is kept by the Budget, as a Limiter's is. (The next call went at
// once while RefusedUntil said one minute.)
func TestBudgetHoldKeptLocallyWhenStoreFails(t *testing.T) {
	b := throughput.NewBudget(200, throughput.WithStore(holdFails{throughputstore.NewMemoryStore(nil)}, "waba"))
	hold := budgetRefused(b, t0, errcodes.AppRateLimit)
	if r := b.ReserveN(t0, 1); !r.OK() || r.TimeToAct().Before(t0.Add(hold)) {
		t.Fatalf("next call at +%v, during the %v hold (RefusedUntil +%v)", r.TimeToAct().Sub(t0), hold, b.RefusedUntil().Sub(t0))
	}
	if budgetAllow(b, t0.Add(hold/2), 1) {
		t.Fatal("AllowN admitted during the hold")
	}
	d := b.Observe(t0.Add(2*time.Minute), []usage.Usage{{Type: usage.TypeManagement, RegainAccess: 5 * time.Minute}})
	if budgetAllow(b, t0.Add(2*time.Minute+d/2), 1) {
		t.Fatal("AllowN admitted during the usage hold")
	}
}
