package outbox_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/outbox"
)

// TestIdempotencyConflict: issue 23 item 6. A key reused for another
// message (another recipient, other content) was answered with the first
// message's ticket: nothing stored, and the second recipient got nothing.
// A key names one message: the same message again gets the first ticket,
// another message is refused with ErrIdempotencyConflict, storing nothing.
func TestIdempotencyConflict(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, o *outbox.Outbox) {
		ctx := t.Context()
		keyed := func(m cloudapi.Message) cloudapi.Message { m.IdempotencyKey = "order-7"; return m }
		first, err := o.Enqueue(ctx, from, keyed(cloudapi.Text("+237690000001", "your order shipped")))
		if err != nil || first.Existing {
			t.Fatalf("first Enqueue = %+v, %v", first, err)
		}
		later := keyed(cloudapi.Text("237 69 00 00 001", "your order shipped"))
		later.ExpiresAt = time.Now().Add(time.Hour) // a deadline is not content
		for name, m := range map[string]cloudapi.Message{
			"same message":               keyed(cloudapi.Text("+237690000001", "your order shipped")),
			"same recipient, other form": later,
		} {
			tk, err := o.Enqueue(ctx, from, m)
			if err != nil || !tk.Existing || tk.Key != first.Key || !tk.EnqueuedAt.Equal(first.EnqueuedAt) {
				t.Errorf("%s: Enqueue = %+v, %v; want the first ticket", name, tk, err)
			}
		}
		for name, m := range map[string]cloudapi.Message{
			"other recipient": keyed(cloudapi.Text("+237690000002", "your order shipped")),
			"other content":   keyed(cloudapi.Text("+237690000001", "your order was cancelled")),
			"other kind":      keyed(cloudapi.Image("+237690000001", cloudapi.Media{ID: "4490709327384033"})),
		} {
			tk, err := o.Enqueue(ctx, from, m)
			if !errors.Is(err, outbox.ErrIdempotencyConflict) || !errors.Is(err, cloudapi.ErrIdempotencyConflict) || tk != (outbox.Ticket{}) {
				t.Errorf("%s: Enqueue = %+v, %v; want ErrIdempotencyConflict", name, tk, err)
			}
			if cloudapi.StateOf(err) != cloudapi.StateNotSubmitted {
				t.Errorf("%s: StateOf = %v, want not_submitted", name, cloudapi.StateOf(err))
			}
		}
		if _, err := o.Enqueue(ctx, "106540352242923", keyed(cloudapi.Text("+237690000001", "your order shipped"))); !errors.Is(err, outbox.ErrIdempotencyConflict) {
			t.Errorf("other sender: %v, want ErrIdempotencyConflict", err)
		}
		tx, err := o.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = o.EnqueueTx(ctx, tx, from, keyed(cloudapi.Text("+237690000002", "your order shipped")))
		tx.Rollback()
		if !errors.Is(err, outbox.ErrIdempotencyConflict) {
			t.Errorf("EnqueueTx, other recipient: %v, want ErrIdempotencyConflict", err)
		}
		if it := mustGet(t, o, "order-7"); it.To != "237690000001" {
			t.Errorf("stored item goes to %s", it.To)
		}
	})
}

// TestIdempotencyConflictConcurrent: callers racing with one key, half to
// one recipient and half to another (so batched together, and across
// lanes): one recipient's message is stored, its callers all get its
// ticket, and every caller of the other gets ErrIdempotencyConflict.
func TestIdempotencyConflictConcurrent(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, o *outbox.Outbox) {
		ctx := t.Context()
		for round := range 10 {
			key := fmt.Sprintf("race-%d", round)
			var mu sync.Mutex
			ok := map[string]int{}
			conflicts := map[string]int{}
			var wg sync.WaitGroup
			for g := range 16 {
				to := recipient(g % 2)
				wg.Go(func() {
					m := cloudapi.Text(to, "x")
					m.IdempotencyKey = key
					_, err := o.Enqueue(ctx, from, m)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						ok[to]++
					case errors.Is(err, outbox.ErrIdempotencyConflict):
						conflicts[to]++
					default:
						t.Error(err)
					}
				})
			}
			wg.Wait()
			it := mustGet(t, o, key)
			stored := "+" + it.To
			if len(ok) != 1 || ok[stored] != 8 || len(conflicts) != 1 || conflicts[stored] != 0 {
				t.Errorf("%s: stored for %s; ok %v, conflicts %v", key, stored, ok, conflicts)
			}
		}
	})
}

// forEachStore runs f on a fresh SQLite outbox and, when one is available,
// a fresh Postgres one.
func forEachStore(t *testing.T, f func(*testing.T, *outbox.Outbox)) {
	t.Run("sqlite", func(t *testing.T) {
		o, _ := openSQLite(t)
		f(t, o)
	})
	t.Run("postgres", func(t *testing.T) {
		o, err := outbox.Open(t.Context(), requirePostgres(t))
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		f(t, o)
	})
}
