package outbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/outbox"
)

// An Enqueue call whose context ends while its shared transaction waits
// for the database (here SQLite's one connection, held by a caller's
// open transaction) returns the context's error and stores nothing,
// instead of waiting for the transaction to end (it ignored its context:
// a caller holding a transaction and waiting for that Enqueue with a
// timeout deadlocked).
func TestSQLiteEnqueueLeavesWhileConnectionBusy(t *testing.T) {
	o, _ := openSQLite(t)
	ctx := t.Context()
	tx, err := o.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	const callers = 8
	done := make(chan error, callers)
	cancels := make([]context.CancelFunc, callers)
	for i := range callers {
		cctx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		m := cloudapi.Text(recipient(i), "x")
		m.IdempotencyKey = "held-" + fmtInt(int64(i))
		go func() {
			_, err := o.Enqueue(cctx, from, m)
			done <- err
		}()
	}
	// Wait until a leader waits for the connection (the others then
	// wait behind it, or were never called).
	for o.DB().Stats().WaitCount == 0 {
		time.Sleep(time.Millisecond)
	}
	for _, cancel := range cancels {
		cancel()
	}
	// A hang guard only: every call must return once its context ended,
	// long before this.
	guard := time.NewTimer(30 * time.Second)
	defer guard.Stop()
	for range callers {
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Enqueue: %v, want context.Canceled", err)
			}
		case <-guard.C:
			t.Fatal("Enqueue calls whose contexts ended still wait for the connection")
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	for i := range callers {
		if _, err := o.Get(ctx, "held-"+fmtInt(int64(i))); !errors.Is(err, outbox.ErrNotFound) {
			t.Errorf("held-%d: Get %v, want ErrNotFound", i, err)
		}
	}
}
