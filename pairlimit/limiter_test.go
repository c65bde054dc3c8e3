package pairlimit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/internal/clocktest"
	"github.com/wapace/wapace/pairlimit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustPair(t testing.TB, from, to string) pairlimit.Pair {
	t.Helper()
	p, err := pairlimit.NewPair(from, to)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// step is one line of a time script: at offset At, reserve N messages for
// pair Pair (0 or 1); want them to go at offset Want.
type step struct {
	At   time.Duration
	Pair int
	N    int
	Want time.Duration
}

func runScript(t *testing.T, lim *pairlimit.Limiter, steps []step) {
	t.Helper()
	pairs := []pairlimit.Pair{mustPair(t, "1001", "237690000001"), mustPair(t, "1001", "237690000002")}
	for i, s := range steps {
		r := lim.ReserveN(t0.Add(s.At), pairs[s.Pair], s.N)
		if !r.OK() {
			t.Fatalf("step %d: reservation not OK: %v", i, r.Err())
		}
		if got := r.TimeToAct().Sub(t0); got != s.Want {
			t.Errorf("step %d (%+v): acts at +%v, want +%v", i, s, got, s.Want)
		}
	}
}

func TestLimiterScripts(t *testing.T) {
	t.Parallel()
	s := time.Second
	ms := time.Millisecond
	tests := []struct {
		name  string
		opts  []pairlimit.Option
		steps []step
	}{
		{"lone sender spaced interval plus margin", nil, []step{
			{0, 0, 1, 0}, {0, 0, 1, 6*s + 250*ms}, {0, 0, 1, 12*s + 500*ms}, {20 * s, 0, 1, 20 * s},
		}},
		{"no margin: exactly 6 s", []pairlimit.Option{pairlimit.WithMargin(0)}, []step{
			{0, 0, 1, 0}, {1 * s, 0, 1, 6 * s}, {2 * s, 0, 1, 12 * s},
		}},
		{"3-bubble reply then a 4th message", []pairlimit.Option{pairlimit.WithMargin(0)}, []step{
			{0, 0, 3, 0}, {1 * s, 0, 1, 18 * s},
		}},
		{"burst of 20 owes two minutes", []pairlimit.Option{pairlimit.WithMargin(0)}, []step{
			{0, 0, 20, 0}, {90 * s, 0, 1, 120 * s},
		}},
		{"pairs are independent", nil, []step{
			{0, 0, 45, 0}, {0, 1, 1, 0}, {1 * s, 1, 1, 6*s + 250*ms}, {2 * s, 0, 1, 270*s + 250*ms},
		}},
		{"a repaid pair sends at once", nil, []step{
			{0, 0, 2, 0}, {time.Hour, 0, 1, time.Hour},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runScript(t, pairlimit.New(pairlimit.Meta, tt.opts...), tt.steps)
		})
	}
}

func TestLimiterSchedulesPassMetasModel(t *testing.T) {
	t.Parallel()
	// The 3-bubble reply and the 4th message of the example, checked
	// against the model itself.
	lim := pairlimit.New(pairlimit.Meta)
	p := mustPair(t, "1001", "237690000001")
	r := lim.ReserveN(t0, p, 3)
	r4 := lim.ReserveN(t0.Add(time.Second), p, 1)
	sends := []time.Time{r.TimeToAct(), r.TimeToAct(), r.TimeToAct(), r4.TimeToAct()}
	for i, v := range pairlimit.Replay(pairlimit.Meta, sends) {
		if !v.Accepted {
			t.Errorf("send %d at %v refused by the model: %+v", i, sends[i], v)
		}
	}
}

func TestAllowN(t *testing.T) {
	t.Parallel()
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
	p := mustPair(t, "1001", "237690000001")
	script := []struct {
		at   time.Duration
		n    int
		want bool
	}{
		{0, 2, true}, {time.Second, 1, false}, {11 * time.Second, 1, false}, {12 * time.Second, 1, true}, {13 * time.Second, 46, false},
	}
	for i, s := range script {
		if got := lim.AllowN(t0.Add(s.at), p, s.n); got != s.want {
			t.Errorf("step %d: AllowN(+%v, %d) = %v, want %v", i, s.at, s.n, got, s.want)
		}
	}
	if lim.AllowN(t0, pairlimit.Pair{}, 1) {
		t.Error("AllowN accepted the zero pair")
	}
}

func TestReserveNRejects(t *testing.T) {
	t.Parallel()
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithBurstCap(5))
	p := mustPair(t, "1001", "237690000001")
	for _, tt := range []struct {
		p    pairlimit.Pair
		n    int
		want error
	}{
		{p, 6, pairlimit.ErrBurstTooLarge},
		{p, 0, pairlimit.ErrInvalidCount},
		{p, -1, pairlimit.ErrInvalidCount},
		{pairlimit.Pair{}, 1, pairlimit.ErrZeroPair},
	} {
		r := lim.ReserveN(t0, tt.p, tt.n)
		if r.OK() || !errors.Is(r.Err(), tt.want) || r.DelayFrom(t0) != pairlimit.InfDuration || !r.TimeToAct().IsZero() {
			t.Errorf("ReserveN(%v, %d) = ok %v err %v", tt.p, tt.n, r.OK(), r.Err())
		}
		r.CancelAt(t0) // harmless
	}
	if lim.Len() != 0 {
		t.Errorf("rejected reservations left %d pairs of state", lim.Len())
	}
	if r := lim.ReserveN(t0, p, 5); !r.OK() || r.DelayFrom(t0) != 0 {
		t.Errorf("a burst at the cap was refused: %v", r.Err())
	}
	// A cap above the policy's Burst is refused, not ignored (issue 20):
	// see TestInvalidOptions.
	above := pairlimit.New(pairlimit.Meta, pairlimit.WithBurstCap(99))
	if r := above.ReserveN(t0, p, 1); above.BurstCap() != 45 || r.OK() || !errors.Is(r.Err(), pairlimit.ErrInvalidOption) {
		t.Errorf("burst cap above the policy's: cap %d, OK %v, %v", above.BurstCap(), r.OK(), r.Err())
	}
}

func TestCancelAt(t *testing.T) {
	t.Parallel()
	p := mustPair(t, "1001", "237690000001")
	t.Run("last reservation is given back", func(t *testing.T) {
		lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
		lim.ReserveN(t0, p, 1)
		r := lim.ReserveN(t0, p, 1) // acts at +6s
		r.CancelAt(t0.Add(time.Second))
		r.CancelAt(t0.Add(time.Second)) // a second cancel changes nothing
		if got := lim.ReserveN(t0.Add(time.Second), p, 1).TimeToAct().Sub(t0); got != 6*time.Second {
			t.Errorf("after give-back next acts at +%v, want +6s", got)
		}
	})
	t.Run("a later reservation keeps it spent", func(t *testing.T) {
		lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
		r1 := lim.ReserveN(t0, p, 1)
		lim.ReserveN(t0, p, 1) // depends on r1's debt
		r1.CancelAt(t0)
		if got := lim.ReserveN(t0, p, 1).TimeToAct().Sub(t0); got != 12*time.Second {
			t.Errorf("next acts at +%v, want +12s", got)
		}
	})
	t.Run("a reservation whose time has come stays spent", func(t *testing.T) {
		lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
		r := lim.ReserveN(t0, p, 1)
		r.CancelAt(t0.Add(time.Millisecond))
		if got := lim.ReserveN(t0.Add(time.Second), p, 1).TimeToAct().Sub(t0); got != 6*time.Second {
			t.Errorf("next acts at +%v, want +6s", got)
		}
	})
	t.Run("cancel at the instant of acting gives back", func(t *testing.T) {
		lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
		lim.ReserveN(t0, p, 1).CancelAt(t0)
		if d := lim.ReserveN(t0, p, 1).DelayFrom(t0); d != 0 {
			t.Errorf("after give-back delay = %v, want 0", d)
		}
	})
	t.Run("a hold since stays, the reservation's own debt is given back", func(t *testing.T) {
		lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
		lim.ReserveN(t0, p, 1)
		r := lim.ReserveN(t0, p, 1)
		lim.Refused(t0, p) // holds 1 s, within the first reservation's debt
		r.CancelAt(t0)
		if got := lim.ReserveN(t0, p, 1).TimeToAct().Sub(t0); got != 6*time.Second {
			t.Errorf("next acts at +%v, want +6s", got)
		}
	})
	t.Run("a long hold since is never given back", func(t *testing.T) {
		lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
		r := lim.ReserveN(t0, p, 1)
		for range 4 {
			lim.Refused(t0, p) // the fourth holds 64 s from t0
		}
		r.CancelAt(t0)
		if got := lim.ReserveN(t0, p, 1).TimeToAct().Sub(t0); got != 64*time.Second {
			t.Errorf("next acts at +%v, want +64s", got)
		}
	})
}

func TestRefusedHoldsOnlyThatPair(t *testing.T) {
	t.Parallel()
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
	p := mustPair(t, "1001", "237690000001")
	other := mustPair(t, "1001", "237690000002")
	otherNumber := mustPair(t, "1002", "237690000001")
	now := t0
	var holds []time.Duration
	for range 6 {
		h := lim.Refused(now, p)
		holds = append(holds, h)
		r := lim.ReserveN(now, p, 1)
		if got := r.DelayFrom(now); got != h {
			t.Errorf("after a hold of %v the pair waits %v", h, got)
		}
		r.CancelAt(now)
		now = now.Add(h)
	}
	s := time.Second
	if diff := cmp.Diff([]time.Duration{s, 4 * s, 16 * s, 64 * s, 256 * s, 256 * s}, holds); diff != "" {
		t.Errorf("holds (-want +got):\n%s", diff)
	}
	for _, q := range []pairlimit.Pair{other, otherNumber} {
		if !lim.AllowN(t0, q, 1) {
			t.Errorf("pair %v was slowed by another pair's 131056", q)
		}
	}
	lim.Accepted(now, p)
	if h := lim.Refused(now, p); h != time.Second {
		t.Errorf("after a success the hold is %v, want 1s", h)
	}
	if lim.Refused(now, pairlimit.Pair{}) != 0 {
		t.Error("Refused on the zero pair held something")
	}
}

func TestWaitNSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := pairlimit.New(pairlimit.Meta) // real clock: synctest's fake time
		p := mustPair(t, "1001", "237690000001")
		start := time.Now()
		var sentAt []time.Duration
		for range 3 {
			if err := lim.Wait(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			sentAt = append(sentAt, time.Since(start))
		}
		want := []time.Duration{0, 6250 * time.Millisecond, 12500 * time.Millisecond}
		if diff := cmp.Diff(want, sentAt); diff != "" {
			t.Errorf("send instants (-want +got):\n%s", diff)
		}

		// A wait that cannot end before the context's deadline fails at once
		// and reserves nothing.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		before := time.Now()
		err := lim.WaitN(ctx, p, 2)
		if !errors.Is(err, backoff.ErrDeadline) || time.Since(before) != 0 {
			t.Fatalf("WaitN = %v after %v, want ErrDeadline at once", err, time.Since(before))
		}
		if strings := err.Error(); containsDigits(strings, p.To()) {
			t.Errorf("error %q leaks the recipient", strings)
		}

		// Cancelled mid-wait, the reservation is given back.
		ctx2, cancel2 := context.WithCancel(t.Context())
		go func() { time.Sleep(2 * time.Second); cancel2() }()
		if err := lim.Wait(ctx2, p); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait = %v, want Canceled", err)
		}
		r := lim.Reserve(p)
		if got := r.TimeToAct().Sub(start); got != 18750*time.Millisecond {
			t.Errorf("after cancel the next slot is +%v, want +18.75s", got)
		}
		if err := lim.WaitN(t.Context(), p, 46); !errors.Is(err, pairlimit.ErrBurstTooLarge) {
			t.Errorf("WaitN(46) = %v", err)
		}
		done, cancel3 := context.WithCancel(t.Context())
		cancel3()
		if err := lim.Wait(done, p); !errors.Is(err, context.Canceled) {
			t.Errorf("Wait(done ctx) = %v", err)
		}
	})
}

func containsDigits(s, digits string) bool {
	for i := 0; i+len(digits) <= len(s); i++ {
		if s[i:i+len(digits)] == digits {
			return true
		}
	}
	return false
}

func TestWaitNMockClock(t *testing.T) {
	t.Parallel()
	clk := clocktest.New()
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithClock(clk), pairlimit.WithMargin(0))
	p := mustPair(t, "1001", "237690000001")
	start := clk.Now()
	var at []time.Duration
	clk.Run(func() {
		for range 3 {
			if err := lim.WaitN(t.Context(), p, 2); err != nil {
				t.Error(err)
			}
			at = append(at, clk.Now().Sub(start))
		}
	})
	if diff := cmp.Diff([]time.Duration{0, 12 * time.Second, 24 * time.Second}, at); diff != "" {
		t.Errorf("send instants (-want +got):\n%s", diff)
	}
}

// TestEvictionFreesRepaidPairs: ordinary traffic sweeps repaid pairs out.
// The limiter's clock follows the instants asked, as WithClock's doc says
// it must when they are not the real time: with the real clock and
// instants two days behind it, the store judges expiry by how much time
// its clock saw pass since those instants were asked (milliseconds here),
// so that calls at a later instant cannot make an earlier debt look repaid
// (TestFutureInstantsKeepBurstDebtWhateverTheClock).
func TestEvictionFreesRepaidPairs(t *testing.T) {
	t.Parallel()
	clk := newFakeClock(t0)
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithClock(clk))
	const n = 5000
	pairs := make([]pairlimit.Pair, n)
	for i := range pairs {
		pairs[i] = mustPair(t, "1001", fmt.Sprintf("2376%08d", i))
		lim.ReserveN(t0, pairs[i], 1)
	}
	penalised := pairs[0]
	lim.Refused(t0, penalised)
	if got := lim.Len(); got != n {
		t.Fatalf("Len = %d, want %d", got, n)
	}
	// An hour later every debt is repaid: ordinary traffic sweeps them out.
	later := t0.Add(time.Hour)
	for i := range 20 * n {
		clk.Set(later)
		lim.AllowN(later, pairs[i%n], 1)
		later = later.Add(time.Millisecond)
	}
	// Another hour on, traffic to other recipients, 10 ms apart, sweeps
	// every shard: only the pairs of the last few seconds may remain.
	later = later.Add(time.Hour)
	others := make([]pairlimit.Pair, 1000)
	for i := range others {
		others[i] = mustPair(t, "1001", fmt.Sprintf("2377%08d", i))
	}
	for i := range 30 * len(others) {
		clk.Set(later)
		lim.AllowN(later, others[i%len(others)], 1)
		later = later.Add(10 * time.Millisecond)
	}
	if got := lim.Len(); got > len(others) {
		t.Errorf("Len = %d after all debts were repaid, want at most %d", got, len(others))
	}
	for _, p := range pairs {
		if !lim.AllowN(later, p, 1) {
			t.Fatalf("evicted pair %v is not free", p)
		}
	}
}

func TestPolicyDefaults(t *testing.T) {
	t.Parallel()
	lim := pairlimit.New(pairlimit.Policy{Interval: -1})
	if lim.Policy() != pairlimit.Meta || lim.Margin() != pairlimit.DefaultMargin || lim.BurstCap() != 45 {
		t.Errorf("defaults: %+v margin %v cap %d", lim.Policy(), lim.Margin(), lim.BurstCap())
	}
	// A negative margin is refused, not clamped to 0 (issue 20): see
	// TestInvalidOptions.
	if r := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(-time.Second)).ReserveN(t0, mustPair(t, "1001", "237690000001"), 1); r.OK() || !errors.Is(r.Err(), pairlimit.ErrInvalidOption) {
		t.Errorf("negative margin: OK %v, %v", r.OK(), r.Err())
	}
}

func TestRefund(t *testing.T) {
	t.Parallel()
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
	p := mustPair(t, "1001", "237690000001")
	lim.ReserveN(t0, p, 1)
	r := lim.ReserveN(t0, p, 1) // acts at +6s
	// Meta refused it at +6.1s: the slot comes back, then the hold applies.
	r.Refund()
	if h := lim.Refused(t0.Add(6100*time.Millisecond), p); h != time.Second {
		t.Fatalf("hold = %v", h)
	}
	if got := lim.ReserveN(t0.Add(6100*time.Millisecond), p, 1).TimeToAct().Sub(t0); got != 7100*time.Millisecond {
		t.Errorf("retry acts at +%v, want +7.1s (the refused send owes nothing)", got)
	}
	var zero pairlimit.Reservation
	zero.Refund() // harmless
}
