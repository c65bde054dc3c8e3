package outbox_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
)

// TestHeldForQualityAssessment: business portfolio pacing holds part of a
// marketing campaign. Held items are accepted with the held sub-state
// (never resent); the ones Meta later drops end failed with 132015, the
// ones it releases end delivered.
func TestHeldForQualityAssessment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t, cloudapitest.WithHeldForQuality("spring_sale", 3))
		o, _ := openSQLite(t)
		c := newClient(t, meta)
		var keys []string
		for i := range 6 {
			m := cloudapi.Template(recipient(i), "spring_sale", "en_US")
			m.Category = cloudapi.CategoryMarketing
			tk, err := o.Enqueue(t.Context(), from, m)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, tk.Key)
		}
		runFor(t, o, c, 10*time.Second)
		held := 0
		for _, k := range keys {
			it := mustGet(t, o, k)
			if it.State != outbox.StateAccepted {
				t.Fatalf("item %s: %v %q", k, it.State, it.Reason)
			}
			if it.Held() {
				held++
			}
		}
		if held != 3 || meta.Accepted() != 6 {
			t.Fatalf("%d held of %d accepted, want 3 of 6", held, meta.Accepted())
		}
		// Meta drops two held messages and releases the third.
		var updates []cloudapitest.StatusUpdate
		n := 0
		for _, r := range meta.Requests() {
			it, _ := o.Get(t.Context(), r.CallbackData)
			if !it.Held() {
				continue
			}
			if n < 2 {
				updates = append(updates, cloudapitest.Failed(r, errcodes.TemplatePaused))
			} else {
				updates = append(updates, cloudapitest.Delivered(r))
			}
			n++
		}
		notification, err := webhook.Parse(meta.StatusBody(updates...))
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Reconcile(t.Context(), notification); err != nil {
			t.Fatal(err)
		}
		var failed, delivered int
		for _, k := range keys {
			switch it := mustGet(t, o, k); {
			case it.State == outbox.StateFailed && it.Code == int(errcodes.TemplatePaused):
				failed++
			case it.State == outbox.StateDelivered && !it.Held():
				delivered++
			case it.Held():
				t.Errorf("item %s still held", k)
			}
		}
		if failed != 2 || delivered != 1 {
			t.Errorf("%d dropped with 132015, %d delivered; want 2 and 1", failed, delivered)
		}
		if meta.Accepted() != 6 {
			t.Errorf("a held message was resent: %d accepted", meta.Accepted())
		}
	})
}
