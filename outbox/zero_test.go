package outbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/outbox"
)

// The zero Outbox and a nil *Outbox are closed: no method panics.
func TestZeroOutboxIsClosed(t *testing.T) {
	ctx := context.Background()
	for name, o := range map[string]*outbox.Outbox{"zero": {}, "nil": nil} {
		for _, f := range []struct {
			n string
			f func() error
		}{
			{"Get", func() error { _, err := o.Get(ctx, "k"); return err }},
			{"Enqueue", func() error { _, err := o.Enqueue(ctx, from, cloudapi.Text(recipient(1), "x")); return err }},
			{"EnqueueTx", func() error { _, err := o.EnqueueTx(ctx, nil, from, cloudapi.Text(recipient(1), "x")); return err }},
			{"Snapshot", func() error { _, err := o.Snapshot(ctx); return err }},
			{"Reconcile", func() error { return o.Reconcile(ctx, &webhook.Notification{}) }},
			{"Run", func() error { return o.Run(ctx, nil) }},
			{"Wake", func() error { o.Wake(); return nil }},
			{"Close", func() error { return o.Close() }},
		} {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s %s: panic %v", name, f.n, r)
					}
				}()
				err := f.f()
				if f.n != "Wake" && f.n != "Close" && !errors.Is(err, outbox.ErrClosed) {
					t.Errorf("%s %s: %v, want ErrClosed", name, f.n, err)
				}
			}()
		}
	}
}
