package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
)

const appSecret = "app-secret-for-tests"

func newHandler(t *testing.T, opts ...webhook.Option) *webhook.Handler {
	t.Helper()
	h, err := webhook.NewHandler(appSecret, opts...)
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
		req.Header.Set(webhook.SignatureHeader, sig)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func TestVerification(t *testing.T) {
	t.Parallel()
	h := newHandler(t, webhook.WithVerifyToken("verify-me"), webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
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
	h2 := newHandler(t, webhook.OnNotification(func(context.Context, *webhook.Notification) error { return nil }))
	rec = httptest.NewRecorder()
	h2.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/webhook?hub.mode=subscribe&hub.verify_token=&hub.challenge=1", nil))
	if rec.Code != http.StatusForbidden {
		t.Errorf("no verify token: GET = %d, want 403", rec.Code)
	}
}

func TestSignature(t *testing.T) {
	t.Parallel()
	called := 0
	h := newHandler(t, webhook.OnNotification(func(context.Context, *webhook.Notification) error { called++; return nil }))
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
	big := strings.Repeat(" ", webhook.MaxBody+1)
	if code := post(t, h, big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d", code)
	}
	for _, junk := range []string{"not json", "[]", `"x"`, ""} {
		if code := post(t, h, junk); code != http.StatusBadRequest {
			t.Errorf("junk body %q: %d, want 400", junk, code)
		}
	}
}

// TestEmptyAppSecret: issue 11 item 7. An empty app secret once
// accepted forged payloads: VerifySignature(body, sig, "") returned nil for
// the HMAC keyed with "".
func TestEmptyAppSecret(t *testing.T) {
	t.Parallel()
	body := []byte(`{"object":"whatsapp_business_account","entry":[]}`)
	forged := cloudapitest.Sign(body, "")
	if err := webhook.VerifySignature(body, forged, ""); !errors.Is(err, webhook.ErrNoAppSecret) {
		t.Errorf("VerifySignature with an empty secret = %v, want ErrNoAppSecret", err)
	}
	if err := webhook.VerifySignature(body, "", ""); !errors.Is(err, webhook.ErrNoAppSecret) {
		t.Errorf("VerifySignature with an empty secret and header = %v, want ErrNoAppSecret", err)
	}
	h, err := webhook.NewHandler("", webhook.OnNotification(func(context.Context, *webhook.Notification) error { return nil }))
	if !errors.Is(err, webhook.ErrNoAppSecret) || h != nil {
		t.Errorf("NewHandler(\"\") = %v, %v; want ErrNoAppSecret", h, err)
	}
}

// TestNeedsCatchAll: a handler must not acknowledge a field nobody
// sees, so it needs OnNotification or OnOther.
func TestNeedsCatchAll(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]webhook.Option{
		nil,
		{webhook.OnMessage(func(context.Context, webhook.Event, *webhook.Message) error { return nil })},
		{webhook.WithVerifyToken("v")},
	} {
		if _, err := webhook.NewHandler(appSecret, opts...); err == nil {
			t.Errorf("NewHandler(%d options without a catch-all) succeeded", len(opts))
		}
	}
	if _, err := webhook.NewHandler(appSecret, nil); err == nil {
		t.Error("NewHandler(nil option) succeeded")
	}
	if _, err := webhook.NewHandler(appSecret, webhook.WithDeduper(nil)); err == nil {
		t.Error("WithDeduper(nil) accepted")
	}
}

// TestLargeBody: Meta's payloads reach 3 MB; the old 1 MiB cap
// refused them with 413, and Meta's retries then gave up.
func TestLargeBody(t *testing.T) {
	t.Parallel()
	var msgs []string
	for i := range 8000 {
		msgs = append(msgs, `{"from":"237690000001","id":"wamid.`+strconv.Itoa(i)+`","timestamp":"1749416383","type":"text","text":{"body":"`+strings.Repeat("x", 280)+`"}}`)
	}
	body := `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"1"},"messages":[` + strings.Join(msgs, ",") + `]}}]}]}`
	if len(body) < 2_900_000 || len(body) > webhook.MaxBody {
		t.Fatalf("body of %d bytes does not test a ~3 MB payload", len(body))
	}
	got := 0
	h := newHandler(t, webhook.OnMessage(func(context.Context, webhook.Event, *webhook.Message) error { got++; return nil }),
		webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
	if code := post(t, h, body); code != http.StatusOK || got != len(msgs) {
		t.Errorf("3 MB body: %d, %d messages delivered, want 200 and %d", code, got, len(msgs))
	}
}

// TestCallbackErrorRedelivers: a failing typed callback answers 500
// and forgets what the delivery recorded, so Meta's redelivery of a
// template update (deduplicated by content) is handed over again.
func TestCallbackErrorRedelivers(t *testing.T) {
	t.Parallel()
	calls := 0
	h := newHandler(t,
		webhook.OnTemplateStatus(func(context.Context, webhook.Event, *webhook.TemplateStatusUpdate) error {
			calls++
			if calls == 1 {
				return errors.New("database down")
			}
			return nil
		}),
		webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
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

// TestConcurrentRedeliveries: Meta's concurrent redeliveries of one
// message reach the callback once. A redelivery that meets the message
// still in another delivery's callback is answered 503 (that delivery may
// yet fail), and Meta delivers it again, as each poster here does, until
// it is answered 200.
func TestConcurrentRedeliveries(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	h := newHandler(t,
		webhook.OnMessage(func(_ context.Context, _ webhook.Event, m *webhook.Message) error {
			mu.Lock()
			defer mu.Unlock()
			seen[m.ID]++
			return nil
		}),
		webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				id := strconv.Itoa((g + i) % 25)
				body := `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"1"},"messages":[{"from":"237690000001","id":"wamid.` + id + `","timestamp":"1","type":"text","text":{"body":"x"}}]}}]}]}`
				code := post(t, h, body)
				for tries := 0; code == http.StatusServiceUnavailable && tries < 1000; tries++ {
					runtime.Gosched()
					code = post(t, h, body)
				}
				if code != http.StatusOK {
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

// TestEnvelopeProblemsReachOther: a malformed entry is reported to
// OnOther even without OnNotification, and the batch is answered 200.
func TestEnvelopeProblemsReachOther(t *testing.T) {
	t.Parallel()
	var got []string
	h := newHandler(t, webhook.OnOther(func(_ context.Context, _ webhook.Event, c *webhook.Change) error {
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
