package outbox_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// Review 8: schema 7's lane numbers (SQLite outbox_lanes), tried where
// they could break: several Outboxes opening one v6 file at once (each
// as another process would: its own pool), enqueueing as soon as they
// are open, and lanes numbered in a transaction that is rolled back.

// checkLaneNumbers fails unless every item carries its lane's number,
// and each lane has one.
func checkLaneNumbers(t *testing.T, o *outbox.Outbox) {
	t.Helper()
	var wrong, lanes, numbered int
	db := o.DB()
	if err := db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM outbox_items i
		WHERE lane_no IS NOT (SELECT id FROM outbox_lanes l WHERE l.lane = i.lane)`).Scan(&wrong); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(t.Context(), `SELECT COUNT(DISTINCT lane), (SELECT COUNT(*) FROM outbox_lanes) FROM outbox_items`).Scan(&lanes, &numbered); err != nil {
		t.Fatal(err)
	}
	if wrong != 0 || numbered < lanes {
		t.Errorf("%d items without their lane's number; %d lanes, %d numbered", wrong, lanes, numbered)
	}
}

// TestReview8ConcurrentOpensOfAV6File: four Outboxes open one v6 file
// at once and each enqueues, at once, into an old lane and a lane of its
// own. Each opens (one migrates, the others find version 7), nothing is
// numbered twice or left without a number, and every item is stored once.
func TestReview8ConcurrentOpensOfAV6File(t *testing.T) {
	path := copyFixture(t, "v6.db")
	const n = 4
	var wg sync.WaitGroup
	obs := make([]*outbox.Outbox, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			o, err := outbox.Open(t.Context(), "sqlite:"+path)
			if err != nil {
				errs[i] = err
				return
			}
			obs[i] = o
			for j, to := range []int{0, 40 + i} {
				key := fmt.Sprintf("open-%d-%d", i, j)
				m := cloudapi.Text(recipient(to), key)
				m.IdempotencyKey = key
				if _, err := o.Enqueue(t.Context(), from, m); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for i, o := range obs {
		if o != nil {
			defer o.Close()
		}
		if errs[i] != nil {
			t.Errorf("Outbox %d: %v", i, errs[i])
		}
	}
	if t.Failed() {
		return
	}
	var v, rows int
	if err := obs[0].DB().QueryRowContext(t.Context(), `SELECT MAX(version), COUNT(*) FROM outbox_schema`).Scan(&v, &rows); err != nil || v != outbox.SchemaVersion || rows != 1 {
		t.Errorf("outbox_schema: version %d in %d rows (%v)", v, rows, err)
	}
	checkLaneNumbers(t, obs[0])
	got := checkCounts(t, obs[0])
	if got[outbox.StateQueued] != 24+2*n {
		t.Errorf("counts %v, want %d queued", got, 24+2*n)
	}
}

// TestReview8LaneNumberOfARolledBackTx: a lane first numbered inside a
// caller's transaction that is rolled back leaves no number behind; the
// number is given again to the next new lane (INTEGER PRIMARY KEY), and
// the lane itself, enqueued again, gets a number of its own. Every lane
// then drains in its order, each item sent once.
func TestReview8LaneNumberOfARolledBackTx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		o, _ := openSQLite(t)
		enqueue := func(to int, key string) {
			t.Helper()
			m := cloudapi.Text(recipient(to), key)
			m.IdempotencyKey = key
			if _, err := o.Enqueue(ctx, from, m); err != nil {
				t.Fatal(err)
			}
		}
		enqueue(1, "a-0")
		for round := range 3 {
			tx, err := o.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for j := range 3 {
				key := fmt.Sprintf("rolled-%d-%d", round, j)
				m := cloudapi.Text(recipient(2), key)
				m.IdempotencyKey = key
				if _, err := o.EnqueueTx(ctx, tx, from, m); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := o.EnqueueTx(ctx, tx, from, cloudapi.Text(recipient(3), "rolled")); err != nil {
				t.Fatal(err)
			}
			var inTx int64
			if err := tx.QueryRowContext(ctx, `SELECT MAX(id) FROM outbox_lanes`).Scan(&inTx); err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			enqueue(4+round, fmt.Sprintf("b-%d", round)) // a new lane takes the number given back
			var b int64
			if err := o.DB().QueryRowContext(ctx, `SELECT lane_no FROM outbox_items WHERE ikey = ?`, fmt.Sprintf("b-%d", round)).Scan(&b); err != nil {
				t.Fatal(err)
			}
			if b > inTx {
				t.Fatalf("b-%d's lane is numbered %d, after the rolled-back %d: no number was given again", round, b, inTx)
			}
			enqueue(1, fmt.Sprintf("a-%d", round+1))
		}
		enqueue(2, "c-0")
		enqueue(2, "c-1")
		checkLaneNumbers(t, o)
		meta := cloudapitest.NewServer(t)
		runDrain(t, o, newClient(t, meta))
		var order []string
		seen := map[string]int{}
		for _, r := range meta.Requests() {
			if !r.Accepted {
				continue
			}
			seen[r.CallbackData]++
			if strings.HasPrefix(r.CallbackData, "a-") || strings.HasPrefix(r.CallbackData, "c-") {
				order = append(order, r.CallbackData)
			}
			if strings.HasPrefix(r.CallbackData, "rolled") {
				t.Errorf("%s, rolled back, was sent", r.CallbackData)
			}
		}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("%s sent %d times", k, n)
			}
		}
		if want := "[a-0 a-1 a-2 a-3 c-0 c-1]"; fmt.Sprint(order) != want && fmt.Sprint(sortLanes(order)) != want {
			t.Errorf("lanes' order %v, want %s", order, want)
		}
		if len(seen) != 9 {
			t.Errorf("%d messages sent, want 9: %v", len(seen), seen)
		}
	})
}

// sortLanes puts the a- lane's items before the c- lane's, keeping each
// lane's own order.
func sortLanes(s []string) []string {
	var a, c []string
	for _, k := range s {
		if strings.HasPrefix(k, "a-") {
			a = append(a, k)
		} else {
			c = append(c, k)
		}
	}
	return append(a, c...)
}

// TestReview8OddKeysDedupeOnBothPaths: Enqueue reads the keys of a batch
// of 8 or more through a JSON list (json_each), and of a smaller one as
// bound parameters. Keys that JSON escapes (NUL, U+2028, quotes, a
// backslash, a tab, HTML's <&>) or that are not ASCII find their stored
// item on both paths: a batch enqueued again stores nothing new, and so
// does each message alone.
func TestReview8OddKeysDedupeOnBothPaths(t *testing.T) {
	o, _ := openSQLite(t)
	odd := []string{"a\x00b", "a\u2028b", "<&>", `"q"`, `back\slash`, "tab\tkey", "é", "😀", "a\x00", "\x00"}
	msg := func(i int) cloudapi.Message {
		m := cloudapi.Text(recipient(i), "x")
		m.IdempotencyKey = odd[i]
		return m
	}
	for round := range 2 {
		var ms []cloudapi.Message
		for i := range odd {
			ms = append(ms, msg(i))
		}
		res, err := o.EnqueueMany(t.Context(), from, ms...)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Err != nil || r.Ticket.Key != odd[i] || r.Ticket.Existing != (round > 0) {
				t.Errorf("round %d, key %q: %+v", round, odd[i], r)
			}
		}
	}
	for i := range odd {
		if tk, err := o.Enqueue(t.Context(), from, msg(i)); err != nil || !tk.Existing {
			t.Errorf("alone, key %q: %+v, %v", odd[i], tk, err)
		}
	}
	if got := checkCounts(t, o); got[outbox.StateQueued] != len(odd) {
		t.Errorf("counts %v, want %d queued", got, len(odd))
	}
}
