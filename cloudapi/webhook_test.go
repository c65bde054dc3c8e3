package cloudapi_test

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
)

const appSecret = "app-secret-for-tests"

func TestWebhookVerification(t *testing.T) {
	t.Parallel()
	h := cloudapi.NewWebhookHandler(appSecret, "verify-me", nil, nil)
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
}

func TestWebhookSignature(t *testing.T) {
	t.Parallel()
	called := 0
	h := cloudapi.NewWebhookHandler(appSecret, "v", func(context.Context, *cloudapi.Notification) error { called++; return nil }, nil)
	body := `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"1"},"statuses":[{"id":"wamid.A","status":"sent","timestamp":"1","recipient_id":"237690000001"}]}}]}]}`
	post := func(sig string, b string) int {
		req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(b))
		if sig != "" {
			req.Header.Set(cloudapi.SignatureHeader, sig)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	good := "sha256=" + hex.EncodeToString(cloudapi.Sign([]byte(body), appSecret))
	if code := post("", body); code != http.StatusUnauthorized {
		t.Errorf("no signature: %d, want 401", code)
	}
	for _, bad := range []string{"sha256=00", "sha1=" + good[7:], "sha256=zz", "sha256=" + hex.EncodeToString(cloudapi.Sign([]byte(body), "other"))} {
		if code := post(bad, body); code != http.StatusForbidden {
			t.Errorf("signature %q: %d, want 403", bad, code)
		}
	}
	if code := post(good, body+" "); code != http.StatusForbidden {
		t.Errorf("tampered body: %d, want 403", code)
	}
	if code := post(good, body); code != http.StatusOK || called != 1 {
		t.Errorf("good: %d, called %d", code, called)
	}
	if code := post(good, body); code != http.StatusOK || called != 1 {
		t.Errorf("redelivery: %d, called %d (want deduplicated)", code, called)
	}
	big := strings.Repeat(" ", cloudapi.MaxWebhookBody+1)
	if code := post("sha256="+hex.EncodeToString(cloudapi.Sign([]byte(big), appSecret)), big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d", code)
	}
	junk := "not json"
	if code := post("sha256="+hex.EncodeToString(cloudapi.Sign([]byte(junk), appSecret)), junk); code != http.StatusBadRequest {
		t.Errorf("junk body: %d", code)
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
		handler := cloudapi.NewWebhookHandler(appSecret, "v", func(_ context.Context, n *cloudapi.Notification) error {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				fail = false
				return errors.New("database down")
			}
			for _, e := range n.Entry {
				for _, c := range e.Changes {
					got = append(got, c.Value.Statuses...)
				}
			}
			return nil
		}, cloudapi.NewDeduper(10))
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

func TestParseNotification(t *testing.T) {
	t.Parallel()
	body := `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages","value":{
		"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},
		"contacts":[{"profile":{"name":"Ada"},"wa_id":"237690000001"}],
		"messages":[{"from":"237690000001","id":"wamid.IN","timestamp":"1749416383","type":"text","text":{"body":"hi"}},
		            {"from":"237690000001","id":"wamid.IMG","timestamp":"1749416384","type":"image","image":{"id":"1","mime_type":"image/jpeg"}}],
		"errors":[{"code":131051,"title":"Unsupported message type","message":"Unsupported message type","error_data":{"details":"x"}}]}}]}]}`
	n, err := cloudapi.ParseNotification([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	v := n.Entry[0].Changes[0].Value
	if v.Metadata.PhoneNumberID != "106540352242922" || v.Contacts[0].Profile.Name != "Ada" || v.Messages[0].Text.Body != "hi" ||
		!strings.Contains(string(v.Messages[1].Content), `"mime_type":"image/jpeg"`) || v.Errors[0].Code != errcodes.UnsupportedMessageType {
		t.Errorf("parsed %+v", v)
	}
	for _, bad := range []string{"", "{}", "[]", `{"entry":[{"changes":[{"value":{"statuses":[{"errors":[{"title":"no code"}]}]}}]}]}`} {
		if _, err := cloudapi.ParseNotification([]byte(bad)); !errors.Is(err, cloudapi.ErrBadNotification) {
			t.Errorf("ParseNotification(%q) = %v", bad, err)
		}
	}
}

func FuzzParseNotification(f *testing.F) {
	f.Add([]byte(`{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"statuses":[{"id":"wamid.A","status":"failed","errors":[{"code":131049}]}]}}]}]}`))
	f.Add([]byte(`{"object":"x","entry":[{"changes":[{"value":{"messages":[{"id":"1","type":"text","text":{"body":"b"}}]}}]}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := cloudapi.ParseNotification(body)
		if err != nil {
			if !errors.Is(err, cloudapi.ErrBadNotification) || n != nil {
				t.Fatalf("ParseNotification = %v, %v", n, err)
			}
			return
		}
		d := cloudapi.NewDeduper(4)
		_ = d
		for _, e := range n.Entry {
			for _, c := range e.Changes {
				for _, s := range c.Value.Statuses {
					for _, ge := range s.Errors {
						_ = ge.Class()
						_ = ge.Error()
					}
				}
			}
		}
	})
}

func TestDeduperIsBounded(t *testing.T) {
	t.Parallel()
	d := cloudapi.NewDeduper(3)
	for _, k := range []string{"a", "b", "c", "d"} {
		if d.Seen(k) {
			t.Errorf("%s seen before", k)
		}
	}
	if d.Len() != 3 || d.Seen("a") {
		t.Errorf("len %d; the oldest key should have been forgotten", d.Len())
	}
	if !d.Seen("d") {
		t.Error("recent key forgotten")
	}
	d.Forget("d")
	if d.Seen("d") {
		t.Error("forgotten key still seen")
	}
}
