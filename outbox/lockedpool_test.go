package outbox_test

import (
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/outbox"
)

// With Postgres, many Enqueue calls to a lane locked by a caller's open
// transaction still hold only that lane: calls to other lanes are stored
// meanwhile. (Each waiting call held a connection of the pool while it
// waited for the lane's lock, so 20 of them took all 16 and every other
// Enqueue waited for the transaction to end.)
func TestPostgresManyCallsBehindLockedLane(t *testing.T) {
	dsn := requirePostgres(t)
	ctx := t.Context()
	o, err := outbox.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	tx, err := o.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := o.EnqueueTx(ctx, tx, from, cloudapi.Text(recipient(1), "held")); err != nil {
		t.Fatal(err)
	}
	const behind = 20
	blocked := make(chan error, behind)
	for range behind {
		go func() {
			_, err := o.Enqueue(ctx, from, cloudapi.Text(recipient(1), "behind the open transaction"))
			blocked <- err
		}()
	}
	// Let one reach the lane's lock, and give the others a moment to take
	// connections if they would (on the fixed code nothing depends on
	// this: the free lanes go whatever the calls behind do).
	for {
		var n int
		if err := o.DB().QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'advisory'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < 500 && o.DB().Stats().InUse < o.DB().Stats().MaxOpenConnections; i++ {
		time.Sleep(time.Millisecond)
	}
	free := make(chan error, 32)
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			_, err := o.Enqueue(ctx, from, cloudapi.Text(recipient(100+g), "free"))
			free <- err
		})
	}
	awaitErrs(t, free, 32, nil, "Enqueue calls to free lanes wait for a transaction holding another lane")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for range behind {
		if err := <-blocked; err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	st, err := o.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Counts[outbox.StateQueued], 1+behind+32; got != want {
		t.Fatalf("%d queued, want %d", got, want)
	}
}
