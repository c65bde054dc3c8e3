package outbox_test

import (
	"context"
	"errors"
	"sync"
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
	awaitErrs(t, done, callers, context.Canceled, "Enqueue calls whose contexts ended still wait for the connection")
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	for i := range callers {
		if _, err := o.Get(ctx, "held-"+fmtInt(int64(i))); !errors.Is(err, outbox.ErrNotFound) {
			t.Errorf("held-%d: Get %v, want ErrNotFound", i, err)
		}
	}
}

// An Enqueue call stored alone (on Postgres, its lane was locked by
// another transaction) whose context ends while its commit is in flight
// tells the truth: it either reports success, or an error and nothing
// stored. (The commit ran under the caller's context: cut short, pgx
// dropped the connection and returned an error while the server went on
// to commit the item.) A deferred trigger holds every commit for a
// moment, so that the context ends during the commit.
func TestPostgresEnqueueAloneCancelledDuringCommit(t *testing.T) {
	dsn := requirePostgres(t)
	ctx := t.Context()
	o, err := outbox.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	db := o.DB()
	for _, q := range []string{
		// The commit cannot be cancelled once it is under way (the
		// trigger swallows the cancel, as the server does once the commit
		// record is written, or when a cancel arrives too late).
		`CREATE FUNCTION test_slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			BEGIN
				PERFORM pg_sleep(1);
			EXCEPTION WHEN query_canceled THEN
				PERFORM pg_sleep(0.2);
			END;
			RETURN NULL;
		END $$`,
		`CREATE CONSTRAINT TRIGGER test_slow_commit AFTER INSERT ON outbox_items DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_slow_commit()`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// A transaction holds the lane: the call is then stored alone.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := o.EnqueueTx(ctx, tx, from, cloudapi.Text(recipient(1), "holds the lane")); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		m := cloudapi.Text(recipient(1), "alone")
		m.IdempotencyKey = "alone"
		_, err := o.Enqueue(cctx, from, m)
		done <- err
	}()
	// Wait until the call waits for the lane's lock, then release it.
	waiting := func(q string) {
		for {
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND `+q).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	waiting(`wait_event = 'advisory'`)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Now its commit is held by the trigger: end its context.
	waiting(`wait_event = 'PgSleep' AND query ILIKE 'commit%'`)
	cancel()
	err = <-done
	// Let the server finish what it was doing with that commit.
	for {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	_, gerr := o.Get(ctx, "alone")
	switch {
	case err == nil && gerr != nil:
		t.Fatalf("Enqueue succeeded, Get: %v", gerr)
	case err != nil && !errors.Is(gerr, outbox.ErrNotFound):
		t.Fatalf("Enqueue returned %v, yet the item was stored (Get: %v)", err, gerr)
	}
}

// Enqueue calls waiting in the group when the Outbox is closed return
// ErrClosed (they returned the driver's "sql: database is closed"), store
// nothing, and none waits for ever.
func TestSQLiteCloseReleasesWaitingEnqueues(t *testing.T) {
	o, _ := openSQLite(t)
	ctx := t.Context()
	tx, err := o.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	const callers = 8
	done := make(chan error, callers)
	for i := range callers {
		m := cloudapi.Text(recipient(i), "x")
		go func() {
			_, err := o.Enqueue(ctx, from, m)
			done <- err
		}()
	}
	for o.DB().Stats().WaitCount == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	awaitErrs(t, done, callers, outbox.ErrClosed, "Enqueue calls still wait after Close")
	_ = tx.Rollback()
}

// When a shared transaction's commit fails, no call of it reports
// success: a call that took the ticket of a key stored earlier in the
// same transaction (the same key enqueued at once by several goroutines)
// got "Existing" for an item that was never committed. A deferred trigger
// fails every commit that stores an item.
func TestPostgresFailedCommitReportsNoSuccess(t *testing.T) {
	dsn := requirePostgres(t)
	ctx := t.Context()
	o, err := outbox.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for _, q := range []string{
		`CREATE FUNCTION test_fail_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no commit'; END $$`,
		`CREATE CONSTRAINT TRIGGER test_fail_commit AFTER INSERT ON outbox_items DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_fail_commit()`,
	} {
		if _, err := o.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	const goroutines, rounds = 32, 8
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for r := range rounds {
				m := cloudapi.Text(recipient(g), "x")
				m.IdempotencyKey = "same-" + fmtInt(int64(r))
				if tk, err := o.Enqueue(ctx, from, m); err == nil {
					t.Errorf("Enqueue of %s succeeded (%+v), yet nothing can be committed", m.IdempotencyKey, tk)
				}
			}
		})
	}
	close(start)
	wg.Wait()
}

// awaitErrs receives n results from errs, each of which must match want
// (be nil when want is nil). The 30 s timer is a hang guard only: every
// call must return long before it, and failing it says hang.
func awaitErrs(t *testing.T, errs <-chan error, n int, want error, hang string) {
	t.Helper()
	guard := time.NewTimer(30 * time.Second)
	defer guard.Stop()
	for range n {
		select {
		case err := <-errs:
			if (want == nil && err != nil) || !errors.Is(err, want) {
				t.Errorf("Enqueue: %v, want %v", err, want)
			}
		case <-guard.C:
			t.Fatal(hang)
		}
	}
}
