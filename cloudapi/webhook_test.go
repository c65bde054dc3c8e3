package cloudapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
)

const appSecret = "app-secret-for-tests"

func newHandler(t *testing.T, opts ...cloudapi.WebhookOption) *cloudapi.WebhookHandler {
	t.Helper()
	h, err := cloudapi.NewWebhookHandler(appSecret, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// post posts body to h signed with appSecret (or with sig when not empty)
// and returns the status.
func post(t *testing.T, h http.Handler, body string) int {
	t.Helper()
	return postSigned(h, body, cloudapitest.Sign([]byte(body), appSecret))
}

func postSigned(h http.Handler, body, sig string) int {
	req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(body))
	if sig != "" {
		req.Header.Set(cloudapi.SignatureHeader, sig)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func TestWebhookVerification(t *testing.T) {
	t.Parallel()
	h := newHandler(t, cloudapi.WithVerifyToken("verify-me"), cloudapi.OnOther(func(context.Context, cloudapi.WebhookEvent, *cloudapi.Change) error { return nil }))
	for _, tc := range []struct {
		query  string
		status int
		body   string
	}{
		{"hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1158201444", 200, "1158201444"},
		{"hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1", 403, ""},
		{"hub.mode=unsubscribe&hub.verify_token=verify-me&hub.challenge=1", 403, ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/webhook?"+tc.query, nil))
		if rec.Code != tc.status || (tc.body != "" && rec.Body.String() != tc.body) {
			t.Errorf("GET ?%s = %d %q", tc.query, rec.Code, rec.Body.String())
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/webhook", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("PUT = %d", rec.Code)
	}
	// Without WithVerifyToken every challenge is refused.
	h2 := newHandler(t, cloudapi.OnNotification(func(context.Context, *cloudapi.Notification) error { return nil }))
	rec = httptest.NewRecorder()
	h2.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/webhook?hub.mode=subscribe&hub.verify_token=&hub.challenge=1", nil))
	if rec.Code != http.StatusForbidden {
		t.Errorf("no verify token: GET = %d, want 403", rec.Code)
	}
}

func TestWebhookSignature(t *testing.T) {
	t.Parallel()
	called := 0
	h := newHandler(t, cloudapi.OnNotification(func(context.Context, *cloudapi.Notification) error { called++; return nil }))
	body := `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"1"},"statuses":[{"id":"wamid.A","status":"sent","timestamp":"1","recipient_id":"237690000001"}]}}]}]}`
	good := cloudapitest.Sign([]byte(body), appSecret)
	if code := postSigned(h, body, ""); code != http.StatusUnauthorized {
		t.Errorf("no signature: %d, want 401", code)
	}
	for _, bad := range []string{"sha256=00", "sha1=" + good[7:], "sha256=zz", cloudapitest.Sign([]byte(body), "other"), good[7:]} {
		if code := postSigned(h, body, bad); code != http.StatusForbidden {
			t.Errorf("signature %q: %d, want 403", bad, code)
		}
	}
	if code := postSigned(h, body+" ", good); code != http.StatusForbidden {
		t.Errorf("tampered body: %d, want 403", code)
	}
	if code := postSigned(h, body, good); code != http.StatusOK || called != 1 {
		t.Errorf("good: %d, called %d", code, called)
	}
	if code := postSigned(h, body, good); code != http.StatusOK || called != 1 {
		t.Errorf("redelivery: %d, called %d (want deduplicated)", code, called)
	}
	big := strings.Repeat(" ", cloudapi.MaxWebhookBody+1)
	if code := post(t, h, big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d", code)
	}
	for _, junk := range []string{"not json", "[]", `"x"`, ""} {
		if code := post(t, h, junk); code != http.StatusBadRequest {
			t.Errorf("junk body %q: %d, want 400", junk, code)
		}
	}
}

// TestWebhookEmptyAppSecret: issue 11 item 7. An empty app secret once
// accepted forged payloads: VerifySignature(body, sig, "") returned nil for
// the HMAC keyed with "".
func TestWebhookEmptyAppSecret(t *testing.T) {
	t.Parallel()
	body := []byte(`{"object":"whatsapp_business_account","entry":[]}`)
	forged := cloudapitest.Sign(body, "")
	if err := cloudapi.VerifySignature(body, forged, ""); !errors.Is(err, cloudapi.ErrNoAppSecret) {
		t.Errorf("VerifySignature with an empty secret = %v, want ErrNoAppSecret", err)
	}
	if err := cloudapi.VerifySignature(body, "", ""); !errors.Is(err, cloudapi.ErrNoAppSecret) {
		t.Errorf("VerifySignature with an empty secret and header = %v, want ErrNoAppSecret", err)
	}
	h, err := cloudapi.NewWebhookHandler("", cloudapi.OnNotification(func(context.Context, *cloudapi.Notification) error { return nil }))
	if !errors.Is(err, cloudapi.ErrNoAppSecret) || h != nil {
		t.Errorf("NewWebhookHandler(\"\") = %v, %v; want ErrNoAppSecret", h, err)
	}
}

// TestWebhookNeedsCatchAll: a handler must not acknowledge a field nobody
// sees, so it needs OnNotification or OnOther.
func TestWebhookNeedsCatchAll(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]cloudapi.WebhookOption{
		nil,
		{cloudapi.OnMessage(func(context.Context, cloudapi.WebhookEvent, *cloudapi.InboundMessage) error { return nil })},
		{cloudapi.WithVerifyToken("v")},
	} {
		if _, err := cloudapi.NewWebhookHandler(appSecret, opts...); err == nil {
			t.Errorf("NewWebhookHandler(%d options without a catch-all) succeeded", len(opts))
		}
	}
	if _, err := cloudapi.NewWebhookHandler(appSecret, nil); err == nil {
		t.Error("NewWebhookHandler(nil option) succeeded")
	}
	if _, err := cloudapi.NewWebhookHandler(appSecret, cloudapi.WithDeduper(nil)); err == nil {
		t.Error("WithDeduper(nil) accepted")
	}
}

// TestWebhookLargeBody: Meta's payloads reach 3 MB; the old 1 MiB cap
// refused them with 413, and Meta's retries then gave up.
func TestWebhookLargeBody(t *testing.T) {
	t.Parallel()
	var msgs []string
	for i := range 8000 {
		msgs = append(msgs, `{"from":"237690000001","id":"wamid.`+strconv.Itoa(i)+`","timestamp":"1749416383","type":"text","text":{"body":"`+strings.Repeat("x", 280)+`"}}`)
	}
	body := `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"1"},"messages":[` + strings.Join(msgs, ",") + `]}}]}]}`
	if len(body) < 2_900_000 || len(body) > cloudapi.MaxWebhookBody {
		t.Fatalf("body of %d bytes does not test a ~3 MB payload", len(body))
	}
	got := 0
	h := newHandler(t, cloudapi.OnMessage(func(context.Context, cloudapi.WebhookEvent, *cloudapi.InboundMessage) error { got++; return nil }),
		cloudapi.OnOther(func(context.Context, cloudapi.WebhookEvent, *cloudapi.Change) error { return nil }))
	if code := post(t, h, body); code != http.StatusOK || got != len(msgs) {
		t.Errorf("3 MB body: %d, %d messages delivered, want 200 and %d", code, got, len(msgs))
	}
}

// TestStatusWebhooksFromTheFake: a campaign message fails later with 131049;
// the signed status webhook reaches the handler with the idempotency key.
func TestStatusWebhooksFromTheFake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, []cloudapitest.Option{cloudapitest.WithAppSecret(appSecret)})
		m := cloudapi.Template(alice, "spring_sale", "en")
		m.IdempotencyKey = "campaign-7/alice"
		if _, err := h.c.Send(t.Context(), number, m); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var got []cloudapi.Status
		fail := true
		handler := newHandler(t, cloudapi.OnStatus(func(_ context.Context, _ cloudapi.WebhookEvent, s *cloudapi.Status) error {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				fail = false
				return errors.New("database down")
			}
			got = append(got, *s)
			return nil
		}), cloudapi.OnOther(func(context.Context, cloudapi.WebhookEvent, *cloudapi.Change) error { return nil }),
			cloudapi.WithDeduper(cloudapi.NewDeduper(10, 1<<20)))
		req := h.srv.Requests()[0]
		// The first delivery fails in the handler: Meta will deliver again,
		// and the redelivery must not be dropped as a duplicate.
		if resp := h.srv.PostStatus(handler, cloudapitest.Failed(req, errcodes.MarketingLimit)); resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("first delivery = %d", resp.StatusCode)
		}
		for range 2 {
			resp := h.srv.PostStatus(handler, cloudapitest.Failed(req, errcodes.MarketingLimit), cloudapitest.Delivered(req))
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("delivery = %d", resp.StatusCode)
			}
		}
		if len(got) != 2 {
			t.Fatalf("statuses delivered %d times, want 2 (once each)", len(got))
		}
		st := got[0]
		if st.Status != "failed" || st.CallbackData != "campaign-7/alice" || len(st.Errors) != 1 || st.Errors[0].Class().Scope != errcodes.ScopeRecipient {
			t.Errorf("status %+v", st)
		}
		if !errors.Is(&st.Errors[0], errcodes.MarketingLimit) {
			t.Error("status error does not match MarketingLimit")
		}
	})
}

// TestWebhookCallbackErrorRedelivers: a failing typed callback answers 500
// and forgets what the delivery recorded, so Meta's redelivery of a
// template update (deduplicated by content) is handed over again.
func TestWebhookCallbackErrorRedelivers(t *testing.T) {
	t.Parallel()
	calls := 0
	h := newHandler(t,
		cloudapi.OnTemplateStatus(func(context.Context, cloudapi.WebhookEvent, *cloudapi.TemplateStatusUpdate) error {
			calls++
			if calls == 1 {
				return errors.New("database down")
			}
			return nil
		}),
		cloudapi.OnOther(func(context.Context, cloudapi.WebhookEvent, *cloudapi.Change) error { return nil }))
	body := `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"message_template_status_update","value":{"event":"PAUSED","message_template_id":"7","message_template_name":"t","message_template_language":"en"}}]}]}`
	for i, want := range []int{http.StatusInternalServerError, http.StatusOK, http.StatusOK} {
		if code := post(t, h, body); code != want {
			t.Errorf("delivery %d = %d, want %d", i, code, want)
		}
	}
	if calls != 2 {
		t.Errorf("callback ran %d times, want 2 (failed, then once more)", calls)
	}
}

// TestWebhookConcurrentRedeliveries: Meta's concurrent redeliveries of one
// message reach the callback once.
func TestWebhookConcurrentRedeliveries(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	h := newHandler(t,
		cloudapi.OnMessage(func(_ context.Context, _ cloudapi.WebhookEvent, m *cloudapi.InboundMessage) error {
			mu.Lock()
			defer mu.Unlock()
			seen[m.ID]++
			return nil
		}),
		cloudapi.OnOther(func(context.Context, cloudapi.WebhookEvent, *cloudapi.Change) error { return nil }))
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				id := strconv.Itoa((g + i) % 25)
				body := `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"1"},"messages":[{"from":"237690000001","id":"wamid.` + id + `","timestamp":"1","type":"text","text":{"body":"x"}}]}}]}]}`
				if code := post(t, h, body); code != http.StatusOK {
					t.Errorf("POST = %d", code)
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != 25 {
		t.Errorf("%d distinct messages delivered, want 25", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("message %s delivered %d times", id, n)
		}
	}
}

// TestWebhookEnvelopeProblemsReachOther: a malformed entry is reported to
// OnOther even without OnNotification, and the batch is answered 200.
func TestWebhookEnvelopeProblemsReachOther(t *testing.T) {
	t.Parallel()
	var got []string
	h := newHandler(t, cloudapi.OnOther(func(_ context.Context, _ cloudapi.WebhookEvent, c *cloudapi.Change) error {
		for _, p := range c.Problems {
			got = append(got, p.Path)
		}
		return nil
	}))
	body := `{"object":"whatsapp_business_account","entry":[7,{"id":"1","changes":{"field":"messages"}}]}`
	if code := post(t, h, body); code != http.StatusOK {
		t.Fatalf("POST = %d", code)
	}
	if want := []string{"entry[0]", "entry[1].changes"}; !slices.Equal(got, want) {
		t.Errorf("problems %v, want %v", got, want)
	}
}
