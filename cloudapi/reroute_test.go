package cloudapi_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
)

// TestMisroutedTemplateIsResentToMessages: a template the Client sent to
// /marketing_messages because its registry (or the message) said MARKETING,
// which Meta refuses as not a marketing template (134100, 131055), goes to
// /messages as a new request, once: the 400 proves nothing was sent, so
// the message is sent exactly once, and it never goes back to
// /marketing_messages. Other refusals there are not re-routed.
func TestMisroutedTemplateIsResentToMessages(t *testing.T) {
	key := cloudapi.TemplateKey{WABAID: waba, Name: "order_update", Language: "en_US"}
	stale := staticCategories{m: map[cloudapi.TemplateKey]cloudapi.Category{key: cloudapi.CategoryMarketing}}
	marketing := func() cloudapi.Message {
		m := cloudapi.Template(alice, "order_update", "en_US")
		m.Category = cloudapi.CategoryMarketing
		return m
	}
	tests := []struct {
		name     string
		srv      []cloudapitest.Option
		opts     []cloudapi.Option
		script   []cloudapitest.Failure
		msg      cloudapi.Message
		paths    []string // the requests, in order
		state    cloudapi.SendState
		code     errcodes.Code // the error's code when not accepted
		attempts int
	}{
		{"stale registry: 134100, then /messages",
			[]cloudapitest.Option{cloudapitest.WithTemplate("order_update", "en_US", "UTILITY")},
			[]cloudapi.Option{cloudapi.WithTemplateCategories(waba, stale)}, nil,
			cloudapi.Template(alice, "order_update", "en_US"),
			[]string{marketingPath, messagesPath}, cloudapi.StateAccepted, 0, 2},
		{"the message's category, wrong at Meta: 134100, then /messages",
			[]cloudapitest.Option{cloudapitest.WithTemplate("order_update", "en_US", "AUTHENTICATION")}, nil, nil,
			marketing(), []string{marketingPath, messagesPath}, cloudapi.StateAccepted, 0, 2},
		{"131055 is re-routed the same way", nil, nil,
			[]cloudapitest.Failure{{Code: errcodes.MarketingAPINotAllowed}},
			marketing(), []string{marketingPath, messagesPath}, cloudapi.StateAccepted, 0, 2},
		{"a 131056 after the re-route is retried at /messages",
			[]cloudapitest.Option{cloudapitest.WithTemplate("order_update", "en_US", "UTILITY")}, nil,
			[]cloudapitest.Failure{{Code: errcodes.PairRateLimit}}, // the template rule answers first,
			marketing(), []string{marketingPath, messagesPath, messagesPath}, cloudapi.StateAccepted, 0, 3},
		{"the re-route is not a retry WithRetry counts", []cloudapitest.Option{cloudapitest.WithTemplate("order_update", "en_US", "UTILITY")},
			[]cloudapi.Option{cloudapi.WithRetry(backoff.Exponential{Max: time.Minute}, 1)}, nil,
			marketing(), []string{marketingPath, messagesPath}, cloudapi.StateAccepted, 0, 2},
		{"134100 at 5xx proves nothing: not re-routed", nil, nil,
			[]cloudapitest.Failure{{Code: errcodes.MarketingAPITemplateCategory, Status: 500}},
			marketing(), []string{marketingPath}, cloudapi.StateSubmittedUnknown, errcodes.MarketingAPITemplateCategory, 1},
		{"134101 (still syncing) is not re-routed", nil, nil,
			[]cloudapitest.Failure{{Code: errcodes.MarketingAPITemplateSync}},
			marketing(), []string{marketingPath}, cloudapi.StateFailed, errcodes.MarketingAPITemplateSync, 1},
		{"134102 at Meta's 500 is a refusal, not re-routed", nil, nil,
			[]cloudapitest.Failure{{Code: errcodes.MarketingAPINotEligible, Status: 500}},
			marketing(), []string{marketingPath}, cloudapi.StateFailed, errcodes.MarketingAPINotEligible, 1},
		{"134100 at /messages is not a re-route", nil, nil,
			[]cloudapitest.Failure{{Code: errcodes.MarketingAPITemplateCategory}},
			cloudapi.Template(alice, "order_update", "en_US"), []string{messagesPath}, cloudapi.StateFailed, errcodes.MarketingAPITemplateCategory, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tc.srv, tc.opts...)
				h.srv.Script(tc.script...)
				res, err := h.c.Send(t.Context(), number, tc.msg)
				var paths []string
				for _, r := range h.srv.Requests() {
					paths = append(paths, r.Path)
				}
				if !equalStrings(paths, tc.paths) {
					t.Errorf("requests %v, want %v", paths, tc.paths)
				}
				if tc.state == cloudapi.StateAccepted {
					if err != nil || res == nil || res.Attempts != tc.attempts || res.Endpoint != "messages" {
						t.Fatalf("Send = %+v, %v; want accepted at messages after %d attempts", res, err, tc.attempts)
					}
					if n := h.srv.Accepted(); n != 1 {
						t.Errorf("%d messages accepted, want exactly 1", n)
					}
					evs := h.events()
					if len(evs) != tc.attempts || evs[0].Code == 0 || evs[0].State != cloudapi.StateRefused {
						t.Errorf("events %+v: the refused attempt must be visible", evs)
					}
					return
				}
				var se *cloudapi.SendError
				if !errors.As(err, &se) || se.State != tc.state || !errors.Is(err, tc.code) || se.Attempts != tc.attempts {
					t.Fatalf("Send = %+v, %v; want %v with %d after %d attempts", res, err, tc.state, tc.code, tc.attempts)
				}
			})
		})
	}
}

// TestReroutedMarketingKeepsPacing: messages re-routed after 134100 share
// the pair's pacing with everything else: two sends to one recipient are
// 6 s apart whatever endpoint took them, and no 131056 is drawn.
func TestReroutedMarketingKeepsPacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, []cloudapitest.Option{cloudapitest.WithTemplate("order_update", "en_US", "UTILITY")})
		m := cloudapi.Template(alice, "order_update", "en_US")
		m.Category = cloudapi.CategoryMarketing
		start := time.Now()
		r1, err := h.c.Send(t.Context(), number, m)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := h.c.Send(t.Context(), number, m)
		if err != nil {
			t.Fatal(err)
		}
		if d := r2.SentAt.Sub(r1.SentAt); d < 6*time.Second {
			t.Errorf("second send %v after the first, want the pair's 6 s", d)
		}
		if n := h.srv.Count(errcodes.PairRateLimit); n != 0 {
			t.Errorf("%d x 131056", n)
		}
		if h.srv.Accepted() != 2 || r1.SentAt.Before(start) {
			t.Errorf("accepted %d", h.srv.Accepted())
		}
	})
}

func equalStrings(a, b []string) bool {
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
