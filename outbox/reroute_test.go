package outbox_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
)

// TestStaleRegistryCampaignIsReroutedOnce: the registry says MARKETING but
// Meta holds the template as UTILITY. Every message of the campaign is
// refused once at /marketing_messages (134100, which proves nothing was
// sent) and accepted once at /messages: no item is lost, none is sent
// twice, and the pacing holds (no 131056 or 130429).
func TestStaleRegistryCampaignIsReroutedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const waba = "102290129340398"
		meta := cloudapitest.NewServer(t, cloudapitest.WithTemplate("order_update", "en_US", "UTILITY"))
		var reg cloudapi.TemplateRegistry
		reg.Set(cloudapi.TemplateKey{WABAID: waba, Name: "order_update", Language: "en_US"}, cloudapi.CategoryMarketing)
		c := newClient(t, meta, cloudapi.WithTemplateCategories(waba, &reg))
		o, _ := openSQLite(t)
		const n = 60
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
		for meta.Accepted() < n && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
		mm, msgs := 0, 0
		for _, r := range meta.Requests() {
			switch {
			case r.Path == "/"+cloudapi.DefaultAPIVersion+"/"+from+"/marketing_messages" && r.Code == errcodes.MarketingAPITemplateCategory:
				mm++
			case r.Path == "/"+cloudapi.DefaultAPIVersion+"/"+from+"/messages" && r.Accepted:
				msgs++
			default:
				t.Errorf("unexpected request to %s: accepted %v, code %d", r.Path, r.Accepted, r.Code)
			}
		}
		if mm != n || msgs != n || meta.Accepted() != n {
			t.Errorf("%d refused at marketing_messages, %d accepted at messages, %d accepted in all; want %d each", mm, msgs, meta.Accepted(), n)
		}
		for _, k := range keys {
			if it := mustGet(t, o, k); it.State != outbox.StateAccepted {
				t.Fatalf("item %s: %v %q", k, it.State, it.Reason)
			}
		}
	})
}
