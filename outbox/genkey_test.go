package outbox_test

import (
	"errors"
	"testing"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/outbox"
)

// Keys Enqueue generates sort in the order of the calls (they land at
// the end of the key index).
func TestGeneratedKeysFollowEnqueueOrder(t *testing.T) {
	o, _ := openSQLite(t)
	var prev string
	for i := range 50 {
		tk, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(i), "hi"))
		if err != nil {
			t.Fatal(err)
		}
		if tk.Key <= prev {
			t.Fatalf("key %q of call %d sorts before %q", tk.Key, i, prev)
		}
		prev = tk.Key
	}
}

// A generated key is not looked up before it is stored (it cannot be
// stored yet), but a WithIdempotencyKeys generator that repeats a key is
// still caught: the same message gets the stored ticket, another message
// is refused, in every enqueue path, within one batch too.
func TestRepeatedGeneratedKeyIsCaught(t *testing.T) {
	o, _ := openSQLite(t, outbox.WithIdempotencyKeys(func() string { return "same-key" }))
	ctx := t.Context()
	a, b := cloudapi.Text(recipient(1), "a"), cloudapi.Text(recipient(1), "b")
	first, err := o.Enqueue(ctx, from, a)
	if err != nil || first.Existing || first.Key != "same-key" {
		t.Fatalf("first Enqueue = %+v, %v", first, err)
	}
	check := func(name string, tk outbox.Ticket, err error, conflict bool) {
		t.Helper()
		if conflict {
			if !errors.Is(err, outbox.ErrIdempotencyConflict) {
				t.Errorf("%s: %+v, %v; want ErrIdempotencyConflict", name, tk, err)
			}
			return
		}
		if err != nil || !tk.Existing || tk.Key != "same-key" {
			t.Errorf("%s: %+v, %v; want the stored ticket", name, tk, err)
		}
	}
	tk, err := o.Enqueue(ctx, from, a)
	check("Enqueue, same message", tk, err, false)
	tk, err = o.Enqueue(ctx, from, b)
	check("Enqueue, another message", tk, err, true)
	res, err := o.EnqueueMany(ctx, from, a, b, a)
	if err != nil {
		t.Fatal(err)
	}
	check("EnqueueMany[0]", res[0].Ticket, res[0].Err, false)
	check("EnqueueMany[1]", res[1].Ticket, res[1].Err, true)
	check("EnqueueMany[2]", res[2].Ticket, res[2].Err, false)
	tx, err := o.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tk, err = o.EnqueueTx(ctx, tx, from, b)
	check("EnqueueTx, another message", tk, err, true)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	snap, err := o.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := snap.Counts[outbox.StateQueued]; n != 1 {
		t.Errorf("queued = %d, want 1", n)
	}

	// A batch of two new messages under one repeated key: the first is
	// stored, the second refused.
	o2, _ := openSQLite(t, outbox.WithIdempotencyKeys(func() string { return "k2" }))
	res, err = o2.EnqueueMany(ctx, from, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || res[0].Ticket.Existing || !errors.Is(res[1].Err, outbox.ErrIdempotencyConflict) {
		t.Errorf("EnqueueMany under one key = %+v", res)
	}
}
