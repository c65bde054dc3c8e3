package cloudapi_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/throughput"
)

type hookKey struct{}

// recHooks records what a Client's Hooks hear.
type recHooks struct {
	mu       sync.Mutex
	starts   []int
	attempts []cloudapi.Event
	ends     [][]cloudapi.SendState
	errs     []error
	ctxOK    bool // every Attempt and SendEnd saw SendStart's context
}

func (h *recHooks) SendStart(ctx context.Context, from string, n int) context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.starts = append(h.starts, n)
	return context.WithValue(ctx, hookKey{}, len(h.starts))
}

func (h *recHooks) Attempt(ctx context.Context, ev cloudapi.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ctx.Value(hookKey{}) != len(h.starts) {
		h.ctxOK = false
	}
	h.attempts = append(h.attempts, ev)
}

func (h *recHooks) SendEnd(ctx context.Context, from string, states []cloudapi.SendState, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ctx.Value(hookKey{}) != len(h.starts) {
		h.ctxOK = false
	}
	h.ends = append(h.ends, append([]cloudapi.SendState(nil), states...))
	h.errs = append(h.errs, err)
}

// ctxTransport checks that requests carry SendStart's context.
type ctxTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []any
}

func (t *ctxTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.seen = append(t.seen, r.Context().Value(hookKey{}))
	t.mu.Unlock()
	return t.next.RoundTrip(r)
}

func TestHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hooks := &recHooks{ctxOK: true}
		tier := throughput.NewTier(1)
		const slow = "106540352242999" // 1 msg/s
		srv := cloudapitest.NewServer(t, cloudapitest.WithThroughput(throughput.Upgraded), cloudapitest.WithNumberThroughput(slow, 1))
		tr := &ctxTransport{next: srv.Client().Transport}
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(&http.Client{Transport: tr}), cloudapi.WithBaseURL(cloudapitest.BaseURL),
			cloudapi.WithThroughput(throughput.Upgraded), cloudapi.WithNumberThroughput(slow, 1), cloudapi.WithTier(tier), cloudapi.WithHooks(hooks))
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		// 0. Two messages at once from the slow number: the second waits
		// for the number.
		for _, to := range []string{"+237 690 00 00 08", "+237 690 00 00 09"} {
			if _, err := c.Send(ctx, slow, cloudapi.Text(to, "0")); err != nil {
				t.Fatal(err)
			}
		}
		// 1. A burst of two to alice.
		if _, err := c.SendBurst(ctx, number, cloudapi.Text(alice, "1"), cloudapi.Text(alice, "2")); err != nil {
			t.Fatal(err)
		}
		// 2. Alice again: the pair owes 12 s.
		if _, err := c.Send(ctx, number, cloudapi.Text(alice, "3")); err != nil {
			t.Fatal(err)
		}
		// 3. A refusal the pair limiter did not expect: retried after
		// the hold.
		srv.FailNextFor(bob, errcodes.PairRateLimit)
		if _, err := c.Send(ctx, number, cloudapi.Text(bob, "4")); err != nil {
			t.Fatal(err)
		}
		// 4. Two templates with a tier of one: the second waits 24 h.
		if _, err := c.Send(ctx, number, cloudapi.Template("+237 690 00 00 05", "promo", "en")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Send(ctx, number, cloudapi.Template("+237 690 00 00 06", "promo", "en")); err != nil {
			t.Fatal(err)
		}
		// 5. A failure for good.
		srv.FailNextFor("+237 690 00 00 07", errcodes.Code(131049))
		_, ferr := c.Send(ctx, number, cloudapi.Text("+237 690 00 00 07", "5"))

		type got struct {
			State cloudapi.SendState
			Held  errcodes.Hold
			Wait  time.Duration
			Code  errcodes.Code
		}
		var gotAttempts []got
		for _, ev := range hooks.attempts {
			gotAttempts = append(gotAttempts, got{ev.State, ev.Held, ev.Wait.Round(time.Second), ev.Code})
			if ev.To != "" || ev.Pair != "" {
				t.Errorf("a hook heard the recipient: %+v", ev)
			}
			if ev.Duration < 0 {
				t.Errorf("negative duration %v", ev.Duration)
			}
		}
		pairWait := (12*time.Second + pairlimit.DefaultMargin).Round(time.Second)
		numberWait := gotAttempts[1].Wait
		if numberWait < time.Second {
			t.Errorf("the slow number's second message waited %v", numberWait)
		}
		want := []got{
			{cloudapi.StateAccepted, errcodes.HoldNone, 0, 0},
			{cloudapi.StateAccepted, errcodes.HoldPhoneNumber, numberWait, 0},
			{cloudapi.StateAccepted, errcodes.HoldNone, 0, 0},
			{cloudapi.StateAccepted, errcodes.HoldNone, 0, 0},
			{cloudapi.StateAccepted, errcodes.HoldPair, pairWait, 0},
			{cloudapi.StateRefused, errcodes.HoldNone, 0, errcodes.PairRateLimit},
			{cloudapi.StateAccepted, errcodes.HoldPair, time.Second, 0},
			{cloudapi.StateAccepted, errcodes.HoldNone, 0, 0},
			{cloudapi.StateAccepted, errcodes.HoldTier, 24 * time.Hour, 0},
			{cloudapi.StateFailed, errcodes.HoldNone, 0, 131049},
		}
		if diff := cmp.Diff(want, gotAttempts); diff != "" {
			t.Errorf("attempts (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int{1, 1, 2, 1, 1, 1, 1, 1}, hooks.starts); diff != "" {
			t.Errorf("SendStart's n (-want +got):\n%s", diff)
		}
		a, f := cloudapi.StateAccepted, cloudapi.StateFailed
		if diff := cmp.Diff([][]cloudapi.SendState{{a}, {a}, {a, a}, {a}, {a}, {a}, {a}, {f}}, hooks.ends); diff != "" {
			t.Errorf("SendEnd's states (-want +got):\n%s", diff)
		}
		if hooks.errs[7] != ferr || hooks.errs[0] != nil {
			t.Errorf("SendEnd's errors %v", hooks.errs)
		}
		if !hooks.ctxOK {
			t.Error("a hook did not get SendStart's context")
		}
		for i, v := range tr.seen {
			if v == nil {
				t.Errorf("request %d lacks SendStart's context", i)
			}
		}
		if _, err := cloudapi.New(secretToken, cloudapi.WithHooks(nil)); err == nil {
			t.Error("WithHooks(nil) accepted")
		}
	})
}
