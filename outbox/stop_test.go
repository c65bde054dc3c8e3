package outbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// Cancelling Run's context is how a caller asks it to stop, at any
// instant: Run must then report the cancellation (never the database
// driver's reaction to it, such as SQLite's "interrupted (9)"), and every
// send that ended must be recorded with its outcome, not left sending.
func TestStopAtAnyInstant(t *testing.T) {
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		meta := cloudapitest.NewServer(nil)
		o, _ := openSQLite(t)
		c := newClient(t, meta)
		for i := range 12 {
			if _, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(i), "hello")); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- o.Run(ctx, c) }()
		time.Sleep(time.Duration(round%12) * 250 * time.Microsecond)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: Run = %v, want context.Canceled", round, err)
		}
		for _, r := range meta.Requests() {
			if !r.Accepted {
				continue
			}
			it := mustGet(t, o, r.CallbackData)
			if it.State != outbox.StateAccepted {
				t.Fatalf("round %d: %s accepted by Meta, recorded %v", round, r.CallbackData, it.State)
			}
		}
		meta.Close()
		o.Close()
	}
}
