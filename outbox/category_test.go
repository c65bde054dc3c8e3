package outbox_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/outbox"
)

// TestCampaignRecategorisedMidRun: Meta recategorises a campaign's UTILITY
// template as MARKETING while the outbox sends it. Until the completed
// template_category_update reaches the registry every send goes to
// /messages; after it, every send goes to /marketing_messages; nothing is
// refused on either side of the switch, and every message is accepted
// once.
func TestCampaignRecategorisedMidRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const waba, secret = "102290129340398", "app-secret"
		meta := cloudapitest.NewServer(t, cloudapitest.WithAppSecret(secret), cloudapitest.WithTemplate("order_update", "en_US", "UTILITY"))
		var reg cloudapi.TemplateRegistry
		c := newClient(t, meta, cloudapi.WithTemplateCategories(waba, &reg))
		ts, err := c.ListTemplates(t.Context(), waba)
		if err != nil || reg.Fill(waba, ts) != 1 {
			t.Fatalf("filling the registry: %v, %+v", err, ts)
		}
		hook, err := webhook.NewHandler(secret,
			webhook.OnTemplateCategory(func(_ context.Context, ev webhook.Event, u *webhook.TemplateCategoryUpdate) error {
				reg.ApplyCategoryUpdate(ev.WABAID, u)
				return nil
			}),
			webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
		if err != nil {
			t.Fatal(err)
		}

		o, _ := openSQLite(t)
		const n = 400 // five seconds at the number's 80 messages per second
		keys := make([]string, n)
		for i := range n {
			tk, err := o.Enqueue(t.Context(), from, cloudapi.Template(recipient(i), "order_update", "en_US"))
			if err != nil {
				t.Fatal(err)
			}
			keys[i] = tk.Key
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- o.Run(ctx, c) }()

		time.Sleep(2 * time.Second)
		// An impending notice first: information only, nothing moves.
		imp, _ := meta.ImpendingCategory(waba, "order_update", "en_US", "MARKETING", time.Now().Add(time.Hour))
		if resp := meta.PostWebhook(hook, imp); resp.StatusCode != 200 {
			t.Fatalf("impending notice answered %d", resp.StatusCode)
		}
		time.Sleep(500 * time.Millisecond)
		body, _ := meta.Recategorize(waba, "order_update", "en_US", "MARKETING")
		switchedAt := time.Now()
		if resp := meta.PostWebhook(hook, body); resp.StatusCode != 200 {
			t.Fatalf("completed notice answered %d", resp.StatusCode)
		}

		for meta.Accepted() < n && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}

		before, after := 0, 0
		for _, r := range meta.Requests() {
			if !r.Accepted {
				t.Errorf("request at %v to %s refused with %d", r.At.Sub(switchedAt), r.Path, r.Code)
				continue
			}
			switch {
			case r.At.Before(switchedAt):
				before++
				if r.Path != "/"+cloudapi.DefaultAPIVersion+"/"+from+"/messages" {
					t.Errorf("before the completed notice (%v): sent to %s", r.At.Sub(switchedAt), r.Path)
				}
			case r.At.After(switchedAt):
				after++
				if r.Path != "/"+cloudapi.DefaultAPIVersion+"/"+from+"/marketing_messages" {
					t.Errorf("after the completed notice (+%v): sent to %s", r.At.Sub(switchedAt), r.Path)
				}
			}
		}
		if before == 0 || after == 0 {
			t.Errorf("%d sends before the switch, %d after: the campaign did not straddle it", before, after)
		}
		if meta.Accepted() != n {
			t.Errorf("%d accepted, want %d", meta.Accepted(), n)
		}
		for _, k := range keys {
			if it := mustGet(t, o, k); it.State != outbox.StateAccepted {
				t.Fatalf("item %s: %v %q", k, it.State, it.Reason)
			}
		}
	})
}
