package cloudapi_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/cloudapi"
)

// TestKeyReusedForAnotherMessage: issue 23 item 6. The Client's memory of
// keys answered another message under a sent key as a duplicate of the
// first (its wamid, no request): the second recipient got nothing. A key
// names one message: another message is refused with
// ErrIdempotencyConflict, no request made; the same message again is still
// a duplicate, answered with the first outcome. The refusal is permanent
// (StateFailed, a *IdempotencyConflictError naming the key): sending the
// same message again cannot succeed, and a queue that retried "not
// submitted" sends (the outbox, ten times) must not retry it.
func TestKeyReusedForAnotherMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		first, err := h.c.Send(t.Context(), number, withKey(cloudapi.Text(alice, "your order shipped"), "order-1"))
		if err != nil {
			t.Fatal(err)
		}
		for name, m := range map[string]cloudapi.Message{
			"other recipient": withKey(cloudapi.Text(bob, "your order shipped"), "order-1"),
			"other content":   withKey(cloudapi.Text(alice, "your order was cancelled"), "order-1"),
		} {
			before := len(h.srv.Requests())
			res, err := h.c.Send(t.Context(), number, m)
			if !errors.Is(err, cloudapi.ErrIdempotencyConflict) || errors.Is(err, cloudapi.ErrDuplicate) || res != nil {
				t.Errorf("%s: Send = %+v, %v; want ErrIdempotencyConflict", name, res, err)
			}
			if st := cloudapi.StateOf(err); st != cloudapi.StateFailed {
				t.Errorf("%s: state %v, want failed", name, st)
			}
			var ce *cloudapi.IdempotencyConflictError
			if !errors.As(err, &ce) || ce.IdempotencyKey != "order-1" {
				t.Errorf("%s: %v is not an *IdempotencyConflictError naming the key", name, err)
			}
			calls := 0
			_ = backoff.Retry(t.Context(), backoff.Exponential{}, func(context.Context) error { calls++; return err })
			if calls != 1 {
				t.Errorf("%s: backoff.Retry made %d attempts, want 1", name, calls)
			}
			if n := len(h.srv.Requests()) - before; n != 0 {
				t.Errorf("%s: %d requests made", name, n)
			}
		}
		if _, err := h.c.Send(t.Context(), "106540352242923", withKey(cloudapi.Text(alice, "your order shipped"), "order-1")); !errors.Is(err, cloudapi.ErrIdempotencyConflict) {
			t.Errorf("other sender: %v, want ErrIdempotencyConflict", err)
		}
		res, err := h.c.Send(t.Context(), number, withKey(cloudapi.Text(alice, "your order shipped"), "order-1"))
		if !errors.Is(err, cloudapi.ErrDuplicate) || res != first {
			t.Errorf("same message again = %+v, %v; want ErrDuplicate with the first result", res, err)
		}
	})
}
