package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/outbox"
)

// laneCapacityRace has goroutines (spread over workers Outboxes on one
// database) enqueue at once to one lane of capacity lcap, for rounds
// lanes, and fails if any lane stored more than lcap items or a refusal
// was not ErrQueueFull.
func laneCapacityRace(t *testing.T, obs []*outbox.Outbox, goroutines, rounds, lcap int) {
	t.Helper()
	ctx := t.Context()
	for round := range rounds {
		var stored, full atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, goroutines)
		for g := range goroutines {
			o := obs[g%len(obs)]
			wg.Go(func() {
				<-start
				m := cloudapi.Text(recipient(round), "x")
				m.IdempotencyKey = fmt.Sprintf("cap-%d-%d", round, g)
				tk, err := o.Enqueue(context.WithoutCancel(ctx), from, m)
				switch {
				case errors.Is(err, outbox.ErrQueueFull):
					full.Add(1)
				case err != nil:
					errs <- err
				case !tk.Existing:
					stored.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		if n := stored.Load(); n != int64(lcap) || stored.Load()+full.Load() != int64(goroutines) {
			t.Fatalf("round %d: %d goroutines on a lane of capacity %d: %d stored, %d refused as full", round, goroutines, lcap, n, full.Load())
		}
	}
	st, err := obs[0].Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Counts[outbox.StateQueued], rounds*lcap; got != want {
		t.Fatalf("%d items queued in %d lanes of capacity %d, want %d", got, rounds, lcap, want)
	}
}

// Concurrent Enqueues to one lane on Postgres (READ COMMITTED) never
// store more than the lane's capacity, from one Outbox or several.
func TestPostgresLaneCapacityUnderConcurrency(t *testing.T) {
	dsn := requirePostgres(t)
	const workers, lcap = 3, 2
	obs := make([]*outbox.Outbox, workers)
	for i := range obs {
		o, err := outbox.Open(t.Context(), dsn, outbox.WithLaneCapacity(lcap), outbox.WithWorkerID(fmt.Sprintf("w%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		obs[i] = o
	}
	laneCapacityRace(t, obs, 24, 40, lcap)
}

// SQLite has one writer at a time (one connection, immediate
// transactions): concurrent Enqueues to one lane never pass its capacity.
func TestSQLiteLaneCapacityUnderConcurrency(t *testing.T) {
	o, _ := openSQLite(t, outbox.WithLaneCapacity(2))
	laneCapacityRace(t, []*outbox.Outbox{o}, 24, 20, 2)
}
