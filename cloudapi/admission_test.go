package cloudapi_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/errcodes"
)

// TestAdmissionNamesTheLimitAndItsCode: the one read-only admission query
// answers when a message could go and which limit, with which Meta code,
// holds it; asking changes nothing.
func TestAdmissionNamesTheLimitAndItsCode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, h *harness)
		to    string
		limit errcodes.Hold
		code  errcodes.Code
		wait  time.Duration
	}{
		{"nothing holds", func(*testing.T, *harness) {}, alice, errcodes.HoldNone, 0, 0},
		{"the pair's debt", func(t *testing.T, h *harness) { mustSend(t, h, alice) }, alice, errcodes.HoldPair, errcodes.PairRateLimit, 6*time.Second + 250*time.Millisecond},
		{"another pair is free", func(t *testing.T, h *harness) { mustSend(t, h, alice) }, bob, errcodes.HoldNone, 0, 0},
		{"the number after 130429", func(_ *testing.T, h *harness) {
			thr := errcodes.ThroughputLimit.Class()
			h.c.Number(number).Throttled(time.Now(), thr.Wait, thr.MaxWait)
		}, alice, errcodes.HoldPhoneNumber, errcodes.ThroughputLimit, time.Second},
		{"the number after a refused send", func(t *testing.T, h *harness) {
			h.srv.FailNext(errcodes.Maintenance)
			go func() { _, _ = h.c.Send(t.Context(), number, cloudapi.Text(bob, "x")) }()
			synctest.Wait()
		}, alice, errcodes.HoldPhoneNumber, errcodes.Maintenance, 10 * time.Second},
		{"a read receipt skips the pair", func(t *testing.T, h *harness) { mustSend(t, h, alice) }, "", errcodes.HoldNone, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil)
				tc.setup(t, h)
				now := time.Now()
				a, err := h.c.Admission(now, number, tc.to, 1)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := h.c.Admission(now, number, tc.to, 1)
				if a != b {
					t.Fatalf("asking twice changed the answer: %+v then %+v", a, b)
				}
				if a.Limit != tc.limit || a.Code != tc.code || a.At.Sub(now) != tc.wait {
					t.Fatalf("Admission = %v %v +%v, want %v %v +%v", a.Limit, a.Code, a.At.Sub(now), tc.limit, tc.code, tc.wait)
				}
			})
		})
	}
}

func TestAdmissionRejectsBadInput(t *testing.T) {
	h := newHarness(t, nil)
	var ve *cloudapi.ValidationError
	for _, tc := range []struct{ from, to string }{{"12ab", alice}, {number, "not a number"}} {
		if _, err := h.c.Admission(time.Now(), tc.from, tc.to, 1); !errors.As(err, &ve) {
			t.Errorf("Admission(%q, %q) = %v, want a *ValidationError", tc.from, tc.to, err)
		}
	}
	if _, err := h.c.Admission(time.Now(), number, alice, 0); !errors.As(err, &ve) {
		t.Errorf("n = 0: %v, want a *ValidationError", err)
	}
}

func mustSend(t *testing.T, h *harness, to string) {
	t.Helper()
	if _, err := h.c.Send(t.Context(), number, cloudapi.Text(to, "x")); err != nil {
		t.Fatal(err)
	}
}
