package outbox_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/outbox"
)

// A lane's send order (its items in (seq, id) order, as Run picks lane
// heads) never puts an item before one whose Enqueue returned before its
// own Enqueue began, though the calls come from many goroutines (and two
// Outboxes sharing one Postgres), in shared and solo transactions.
func TestPostgresLaneOrderFollowsReturns(t *testing.T) {
	dsn := requirePostgres(t)
	obs := make([]*outbox.Outbox, 2)
	for i := range obs {
		o, err := outbox.Open(t.Context(), dsn, outbox.WithWorkerID(fmt.Sprintf("w%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		obs[i] = o
	}
	laneOrderFollowsReturns(t, obs)
}

func TestSQLiteLaneOrderFollowsReturns(t *testing.T) {
	o, _ := openSQLite(t)
	laneOrderFollowsReturns(t, []*outbox.Outbox{o})
}

func laneOrderFollowsReturns(t *testing.T, obs []*outbox.Outbox) {
	ctx := t.Context()
	const goroutines, each = 16, 10
	var clock atomic.Int64 // a logical clock of call starts and returns
	type span struct{ began, returned int64 }
	var mu sync.Mutex
	spans := map[string]span{}
	var wg sync.WaitGroup
	for g := range goroutines {
		o := obs[g%len(obs)]
		wg.Go(func() {
			for i := range each {
				m := cloudapi.Text(recipient(1), "x")
				m.IdempotencyKey = fmt.Sprintf("g%d-%d", g, i)
				// Every third goes to a second lane too, so that batches
				// mix lanes.
				if i%3 == 0 {
					m = cloudapi.Text(recipient(2), "x")
					m.IdempotencyKey = fmt.Sprintf("g%d-%d", g, i)
				}
				b := clock.Add(1)
				if _, err := o.Enqueue(ctx, from, m); err != nil {
					t.Error(err)
					return
				}
				r := clock.Add(1)
				mu.Lock()
				spans[m.IdempotencyKey] = span{b, r}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	rows, err := obs[0].DB().QueryContext(ctx, `SELECT ikey FROM outbox_items ORDER BY lane, seq, id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var order []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		order = append(order, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(order) != goroutines*each {
		t.Fatalf("%d items, want %d", len(order), goroutines*each)
	}
	for i, a := range order {
		for _, b := range order[i+1:] {
			// In one lane, a is sent before b: b must not have
			// returned before a began.
			sa, sb := spans[a], spans[b]
			if sameLane(a, b) && sb.returned < sa.began {
				t.Errorf("%s is sent before %s, whose Enqueue returned before %s's began", a, b, a)
			}
		}
	}
}

// sameLane reports whether keys g%d-%d of TestPostgresLaneOrderFollowsReturns
// went to one lane.
func sameLane(a, b string) bool {
	var ga, ia, gb, ib int
	_, _ = fmt.Sscanf(a, "g%d-%d", &ga, &ia)
	_, _ = fmt.Sscanf(b, "g%d-%d", &gb, &ib)
	return (ia%3 == 0) == (ib%3 == 0)
}
