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

// One key enqueued at once by many goroutines through two Outboxes on one
// Postgres is stored once, and every caller with the stored message gets
// the stored item's ticket: the same state, enqueue instant and deadline.
// (A caller whose insert met the other Outbox's uncommitted row got a
// ticket with neither instant.) Half the callers write to another
// recipient, so that no lane lock orders them: they race the insert, and
// are refused with ErrIdempotencyConflict (a key names one message).
func TestPostgresSameKeySameTicket(t *testing.T) {
	dsn := requirePostgres(t)
	ctx := t.Context()
	obs := make([]*outbox.Outbox, 2)
	for i := range obs {
		o, err := outbox.Open(ctx, dsn, outbox.WithWorkerID(fmt.Sprintf("w%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		obs[i] = o
	}
	const goroutines, rounds = 32, 40
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	var mu sync.Mutex
	tickets := map[string][]outbox.Ticket{}
	conflicts := map[string]int{}
	// Every round starts at once for all (goroutines drift apart
	// otherwise, and meet less).
	starts := make([]chan struct{}, rounds)
	var done [rounds]sync.WaitGroup
	for r := range starts {
		starts[r] = make(chan struct{})
		done[r].Add(goroutines)
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		o := obs[g%2]
		wg.Go(func() {
			for r := range rounds {
				<-starts[r]
				m := cloudapi.Text(recipient(100*r+g%2), "x")
				m.IdempotencyKey = fmt.Sprintf("same-%d", r)
				m.ExpiresAt = exp
				tk, err := o.Enqueue(ctx, from, m)
				if errors.Is(err, outbox.ErrIdempotencyConflict) {
					mu.Lock()
					conflicts[m.IdempotencyKey]++
					mu.Unlock()
				} else if err != nil {
					t.Error(err)
				} else {
					mu.Lock()
					tickets[tk.Key] = append(tickets[tk.Key], tk)
					mu.Unlock()
				}
				done[r].Done()
			}
		})
	}
	for r := range rounds {
		close(starts[r])
		done[r].Wait()
	}
	wg.Wait()
	for key, ts := range tickets {
		it, err := obs[0].Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		news := 0
		for _, tk := range ts {
			if !tk.Existing {
				news++
			}
			if tk.State != it.State || !tk.EnqueuedAt.Equal(it.EnqueuedAt) || !tk.ExpiresAt.Equal(it.ExpiresAt) {
				t.Errorf("%s: ticket %+v, but the item is %v, enqueued at %v, expiring at %v", key, tk, it.State, it.EnqueuedAt, it.ExpiresAt)
			}
		}
		if news != 1 {
			t.Errorf("%s: %d callers were told they stored it", key, news)
		}
		if len(ts) != goroutines/2 || conflicts[key] != goroutines/2 {
			t.Errorf("%s: %d tickets and %d conflicts, want %d of each", key, len(ts), conflicts[key], goroutines/2)
		}
	}
}
