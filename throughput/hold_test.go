package throughput_test

import (
	"testing"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
)

// TestHoldsTakeTheirScheduleNotACode: the limiters hold for the schedule
// they are given; errcodes is the one table that gives it per code, and
// the deprecated Refused is exactly that for one code.
func TestHoldsTakeTheirScheduleNotACode(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	s := time.Second

	// Hold: first, doubling up to limit, reset by Accepted.
	l := throughput.New(throughput.Default)
	var got []time.Duration
	now := t0
	for range 4 {
		h := l.Hold(now, 3*s, 10*s)
		got, now = append(got, h), now.Add(h)
	}
	if want := []time.Duration{3 * s, 6 * s, 10 * s, 10 * s}; !equal(got, want) {
		t.Errorf("Hold schedule = %v, want %v", got, want)
	}
	if !l.HeldUntil().Equal(now) {
		t.Errorf("HeldUntil = %v, want %v", l.HeldUntil(), now)
	}
	l.Accepted(now)
	if h := l.Hold(now, 3*s, 10*s); h != 3*s {
		t.Errorf("after a success Hold = %v, want 3s", h)
	}
	if h := l.Hold(now, 7*s, 0); h != 7*s {
		t.Errorf("fixed Hold = %v, want 7s", h)
	}
	if h := l.Hold(now, 0, time.Hour); h != 0 {
		t.Errorf("Hold without a first hold = %v, want 0", h)
	}

	// Throttled: a new event doubles; one inside the event's hold is the
	// same event.
	th := throughput.New(throughput.Default, throughput.WithAdaptiveRate(false))
	if h := th.Throttled(t0, 2*s, 5*s); h != 2*s {
		t.Errorf("first event = %v, want 2s", h)
	}
	if h := th.Throttled(t0.Add(s), 2*s, 5*s); h != s {
		t.Errorf("inside the event = %v, want the rest, 1s", h)
	}
	if h := th.Throttled(t0.Add(20*s), 2*s, 5*s); h != 4*s {
		t.Errorf("second event = %v, want 4s", h)
	}
	if h := th.Throttled(t0.Add(40*s), 2*s, 5*s); h != 5*s {
		t.Errorf("third event = %v, want the limit, 5s", h)
	}

	// Budget.Hold: the same schedule rule.
	b := throughput.NewBudget(200)
	if h := b.Hold(t0, time.Minute, time.Hour); h != time.Minute {
		t.Errorf("budget hold = %v", h)
	}
	if h := b.Hold(t0, time.Minute, time.Hour); h != 2*time.Minute {
		t.Errorf("second budget hold = %v", h)
	}
	if !b.RefusedUntil().Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("RefusedUntil = %v", b.RefusedUntil())
	}
}

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// refused applies Meta's refusal code to the number's limiter the way the
// cloudapi Client does (errcodes is the one table of holds): Throttled for
// a throughput refusal, Hold for another condition holding the number, and
// nothing for codes that hold something else or have no wait.
func refused(l *throughput.Limiter, t time.Time, code errcodes.Code) time.Duration {
	cl := errcodes.Lookup(code)
	switch {
	case cl.Hold != errcodes.HoldPhoneNumber || cl.Wait <= 0:
		return 0
	case cl.Throttling:
		return l.Throttled(t, cl.Wait, cl.MaxWait)
	default:
		return l.Hold(t, cl.Wait, cl.MaxWait)
	}
}

// budgetRefused applies Meta's refusal code to the call budget the way the
// cloudapi Client does: Hold with errcodes' schedule for the codes that
// hold the app's or the WABA's budget, nothing for others.
func budgetRefused(b *throughput.Budget, t time.Time, code errcodes.Code) time.Duration {
	cl := errcodes.Lookup(code)
	if cl.Hold != errcodes.HoldApp && cl.Hold != errcodes.HoldWABA {
		return 0
	}
	return b.Hold(t, cl.Wait, cl.MaxWait)
}
