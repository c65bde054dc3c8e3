package cloudapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/errcodes"
)

const appSecret = "app-secret-for-tests"

// TestVerifySignatureForwards: cloudapi.VerifySignature and MaxWebhookBody
// are the webhook package's, and the errors match its sentinels.
func TestVerifySignatureForwards(t *testing.T) {
	t.Parallel()
	body := []byte(`{"object":"whatsapp_business_account","entry":[]}`)
	for _, tc := range []struct {
		header, secret string
		want           error
	}{
		{cloudapitest.Sign(body, appSecret), appSecret, nil},
		{"", appSecret, webhook.ErrNoSignature},
		{cloudapitest.Sign(body, "other"), appSecret, webhook.ErrBadSignature},
		{"sha256=zz", appSecret, webhook.ErrBadSignature},
		{cloudapitest.Sign(body, ""), "", webhook.ErrNoAppSecret},
	} {
		err := cloudapi.VerifySignature(body, tc.header, tc.secret)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("VerifySignature(%q) = %v, want %v", tc.header, err, tc.want)
		}
		if err2 := webhook.VerifySignature(body, tc.header, tc.secret); !errors.Is(err, err2) && err != err2 {
			t.Errorf("cloudapi and webhook disagree on %q: %v, %v", tc.header, err, err2)
		}
		if err != nil && strings.Contains(err.Error(), appSecret) {
			t.Errorf("error %q quotes the app secret", err)
		}
	}
	if cloudapi.MaxWebhookBody != webhook.MaxBody || cloudapi.MaxWebhookBody < 3_000_000 {
		t.Errorf("MaxWebhookBody = %d, webhook.MaxBody = %d", cloudapi.MaxWebhookBody, webhook.MaxBody)
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
		var got []webhook.Status
		fail := true
		handler := newWebhookHandler(t, webhook.OnStatus(func(_ context.Context, _ webhook.Event, s *webhook.Status) error {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				fail = false
				return errors.New("database down")
			}
			got = append(got, *s)
			return nil
		}), webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }),
			webhook.WithDeduper(webhook.NewDeduper(10, 1<<20)))
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

func newWebhookHandler(t *testing.T, opts ...webhook.Option) *webhook.Handler {
	t.Helper()
	h, err := webhook.NewHandler(appSecret, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
