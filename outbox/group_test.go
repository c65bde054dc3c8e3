package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/outbox"
)

// sharedEnqueues has many goroutines enqueue at once (their calls share
// transactions) a mix of messages, each call's outcome decided as if it
// were alone: a new message is stored and visible as soon as Enqueue
// returns, with one queued transition; an invalid, late or over-capacity
// one stores nothing and leaves the others of its transaction stored; a
// key enqueued by several goroutines at once is stored once; a call whose
// context ended before it was stored stores nothing.
func sharedEnqueues(t *testing.T, obs []*outbox.Outbox, lcap int) {
	t.Helper()
	ctx := t.Context()
	const goroutines, rounds = 48, 6
	type outcome struct {
		key      string
		stored   bool // Enqueue said it stored it
		existing bool
	}
	results := make(chan outcome, goroutines*rounds*6)
	errs := make(chan error, goroutines*rounds*6)
	var wg sync.WaitGroup
	start := make(chan struct{})
	past := time.Now().Add(-time.Minute)
	for g := range goroutines {
		o := obs[g%len(obs)]
		wg.Go(func() {
			<-start
			enq := func(ctx context.Context, m cloudapi.Message) (outbox.Ticket, error) {
				tk, err := o.Enqueue(ctx, from, m)
				if err == nil {
					results <- outcome{key: tk.Key, stored: !tk.Existing, existing: tk.Existing}
					if !tk.Existing {
						// Committed before Enqueue returned.
						if _, gerr := o.Get(context.WithoutCancel(ctx), tk.Key); gerr != nil {
							errs <- fmt.Errorf("stored %s, then Get: %w", tk.Key, gerr)
						}
					}
				}
				return tk, err
			}
			for r := range rounds {
				// A new message on a lane of its own.
				m := cloudapi.Text(recipient(1000+g*rounds+r), "x")
				m.IdempotencyKey = fmt.Sprintf("own-%d-%d", g, r)
				if tk, err := enq(ctx, m); err != nil || tk.Existing {
					errs <- fmt.Errorf("own message %s: %v (existing %v)", m.IdempotencyKey, err, tk.Existing)
				}
				// One key enqueued by every goroutine this round.
				m = cloudapi.Text(recipient(500+r), "x")
				m.IdempotencyKey = fmt.Sprintf("shared-%d", r)
				if _, err := enq(ctx, m); err != nil {
					errs <- fmt.Errorf("shared key: %v", err)
				}
				// Invalid: nothing stored.
				m = cloudapi.Text("not a number", "x")
				m.IdempotencyKey = fmt.Sprintf("invalid-%d-%d", g, r)
				var ve *cloudapi.ValidationError
				if _, err := enq(ctx, m); !errors.As(err, &ve) {
					errs <- fmt.Errorf("invalid message: %v, want a ValidationError", err)
				}
				// Past its deadline: nothing stored.
				m = cloudapi.Text(recipient(2000+g), "x")
				m.IdempotencyKey = fmt.Sprintf("late-%d-%d", g, r)
				m.ExpiresAt = past
				if _, err := enq(ctx, m); !errors.Is(err, outbox.ErrExpired) {
					errs <- fmt.Errorf("late message: %v, want ErrExpired", err)
				}
				// Everyone on one lane: lcap stored in all, the rest full.
				m = cloudapi.Text(recipient(7), "x")
				m.IdempotencyKey = fmt.Sprintf("crowd-%d-%d", g, r)
				if _, err := enq(ctx, m); err != nil && !errors.Is(err, outbox.ErrQueueFull) {
					errs <- fmt.Errorf("crowded lane: %v", err)
				}
				// A context that ends at some point: stored (and visible)
				// if and only if Enqueue said so.
				cctx, cancel := context.WithCancel(ctx)
				if g%2 == 0 {
					cancel()
				}
				m = cloudapi.Text(recipient(3000+g*rounds+r), "x")
				m.IdempotencyKey = fmt.Sprintf("cancel-%d-%d", g, r)
				go cancel()
				// (Alone in its own transaction, a call cut short may fail
				// with the driver's words rather than context.Canceled.)
				if _, err := enq(cctx, m); err != nil {
					if _, gerr := o.Get(ctx, m.IdempotencyKey); !errors.Is(gerr, outbox.ErrNotFound) {
						errs <- fmt.Errorf("a cancelled call returned %v but Get says %v", err, gerr)
					}
				}
				cancel()
			}
		})
	}
	close(start)
	wg.Wait()
	close(results)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	stored := map[string]int{}
	crowd := 0
	for r := range results {
		if r.stored {
			stored[r.key]++
			if len(r.key) > 6 && r.key[:6] == "crowd-" {
				crowd++
			}
		}
	}
	for k, n := range stored {
		if n != 1 {
			t.Errorf("%s stored by %d calls", k, n)
		}
	}
	for r := range rounds {
		if n := stored[fmt.Sprintf("shared-%d", r)]; n != 1 {
			t.Errorf("shared-%d: stored by %d calls, want 1", r, n)
		}
	}
	if crowd != lcap {
		t.Errorf("%d stored on a lane of capacity %d", crowd, lcap)
	}
	st, err := obs[0].Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Counts[outbox.StateQueued]; got != len(stored) {
		t.Errorf("%d items queued, %d calls said they stored one", got, len(stored))
	}
	for k := range stored {
		it, err := obs[0].Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(it.History) != 1 || it.History[0].State != outbox.StateQueued {
			t.Errorf("%s: history %+v, want one queued transition", k, it.History)
		}
	}
}

func TestSQLiteSharedEnqueues(t *testing.T) {
	o, _ := openSQLite(t, outbox.WithLaneCapacity(5))
	sharedEnqueues(t, []*outbox.Outbox{o}, 5)
}

func TestPostgresSharedEnqueues(t *testing.T) {
	dsn := requirePostgres(t)
	obs := make([]*outbox.Outbox, 3)
	for i := range obs {
		o, err := outbox.Open(t.Context(), dsn, outbox.WithLaneCapacity(5), outbox.WithWorkerID(fmt.Sprintf("w%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		obs[i] = o
	}
	sharedEnqueues(t, obs, 5)
}

// With Postgres, a lane locked by a caller's open transaction holds only
// the Enqueue calls to that lane: calls to other lanes, which may share a
// transaction with it, are stored meanwhile; it is stored once the lock
// is released.
func TestPostgresLockedLaneHoldsOnlyItself(t *testing.T) {
	dsn := requirePostgres(t)
	o, err := outbox.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ctx := t.Context()
	tx, err := o.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := o.EnqueueTx(ctx, tx, from, cloudapi.Text(recipient(1), "held")); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() {
		m := cloudapi.Text(recipient(1), "behind the open transaction")
		m.IdempotencyKey = "blocked"
		_, err := o.Enqueue(ctx, from, m)
		blocked <- err
	}()
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			if _, err := o.Enqueue(ctx, from, cloudapi.Text(recipient(100+g), "free")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait() // would hang if a free lane waited for the locked one
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	st, err := o.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Counts[outbox.StateQueued]; got != 34 {
		t.Fatalf("%d queued, want 34", got)
	}
}
