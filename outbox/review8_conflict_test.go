package outbox_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// TestReview8ClientConflictFailsOnce: a key the Client already sent for
// another message (the application sent "order-9" to one user directly,
// then queued "order-9" to another) is refused by the Client with the
// typed *IdempotencyConflictError: the outbox item fails at once, for
// good, after one attempt, with nothing sent; it is not retried, and its
// lane goes on.
func TestReview8ClientConflictFailsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		o, _ := openSQLite(t)
		c := newClient(t, meta)
		direct := cloudapi.Text(recipient(1), "direct")
		direct.IdempotencyKey = "order-9"
		if _, err := c.Send(t.Context(), from, direct); err != nil {
			t.Fatal(err)
		}
		queued := cloudapi.Text(recipient(2), "queued")
		queued.IdempotencyKey = "order-9"
		next := cloudapi.Text(recipient(2), "next")
		next.IdempotencyKey = "after-9"
		for _, m := range []cloudapi.Message{queued, next} {
			if _, err := o.Enqueue(t.Context(), from, m); err != nil {
				t.Fatal(err)
			}
		}
		runFor(t, o, c, 30*time.Minute)
		it := mustGet(t, o, "order-9")
		if it.State != outbox.StateFailed || it.Attempts != 1 {
			t.Errorf("order-9 queued after a direct send: %v after %d attempts (%s)", it.State, it.Attempts, it.Reason)
		}
		if after := mustGet(t, o, "after-9"); after.State != outbox.StateAccepted {
			t.Errorf("the lane's next item: %v (%s)", after.State, after.Reason)
		}
		n := 0
		for _, r := range meta.Requests() {
			if r.CallbackData == "order-9" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("order-9 reached Meta %d times, want once (the direct send)", n)
		}
		_, err := c.Send(t.Context(), from, queued)
		var ce *cloudapi.IdempotencyConflictError
		if !errors.As(err, &ce) || cloudapi.StateOf(err) != cloudapi.StateFailed {
			t.Errorf("the Client's answer: %v (%v)", err, cloudapi.StateOf(err))
		}
	})
}
