package outbox

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapace/wapace/cloudapi"
)

// A Run transaction's claims and acceptances, collected in one moveLog
// and flushed once, leave the counters equal to a recount (netted: an
// acceptance and a claim of one number in one transaction leave its
// sending counter as it was; the first acceptance of a number creates its
// counter) and one history row per transition.
func TestMoveLogNetsOneTransaction(t *testing.T) {
	ctx := t.Context()
	o, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	const a, b = "106540352242901", "106540352242902"
	type item struct {
		id          int64
		key, sender string
	}
	var items []item
	for i, from := range []string{a, a, a, b} {
		tk, err := o.Enqueue(ctx, from, cloudapi.Text(fmt.Sprintf("+23769000000%d", i), "x"))
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := o.db.QueryRowContext(ctx, `SELECT id FROM outbox_items WHERE ikey = ?`, tk.Key).Scan(&id); err != nil {
			t.Fatal(err)
		}
		items = append(items, item{id, tk.Key, from})
	}
	ref := func(i int) claimRef { return claimRef{items[i].id, items[i].sender} }
	inTx := func(f func(tx *sql.Tx, log *moveLog) error) {
		t.Helper()
		tx, err := o.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		log := &moveLog{}
		if err := f(tx, log); err != nil {
			t.Fatal(err)
		}
		if err := log.flush(ctx, o, tx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	counts := func() map[string]int {
		t.Helper()
		got := map[string]int{}
		rows, err := o.db.QueryContext(ctx, `SELECT sender, state, n FROM outbox_counts WHERE n <> 0`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var sender, state string
			var n int
			if err := rows.Scan(&sender, &state, &n); err != nil {
				t.Fatal(err)
			}
			got[sender+"/"+state] = n
		}
		return got
	}

	// Claim a's first two items and b's.
	inTx(func(tx *sql.Tx, log *moveLog) error {
		return o.claimMoved(ctx, tx, log, []claimRef{ref(0), ref(1), ref(3)}, "w1", 2e18, 10, 0)
	})
	want := map[string]int{a + "/queued": 1, a + "/sending": 2, b + "/sending": 1}
	if diff := cmp.Diff(want, counts()); diff != "" {
		t.Fatalf("after the claim, counters (-want +got):\n%s", diff)
	}
	// Accept a's first item and claim its third in one transaction: a's
	// sending counter nets to no change; its accepted counter is created.
	inTx(func(tx *sql.Tx, log *moveLog) error {
		keys, err := o.acceptMoved(ctx, tx, log, 20, "w1", []acceptRef{{items[0].id, items[0].key, a, "wamid.1"}})
		if err != nil || len(keys) != 1 || keys[0] != items[0].key {
			return fmt.Errorf("accepted %v, %v", keys, err)
		}
		if n := len(log.delta["sending"]); n != 1 {
			return fmt.Errorf("before the claim, %d sending counters change, want 1", n)
		}
		if err := o.claimMoved(ctx, tx, log, []claimRef{ref(2)}, "w1", 2e18, 20, 0); err != nil {
			return err
		}
		if d, ok := log.delta["sending"][a]; !ok || d != 0 {
			return fmt.Errorf("a's sending change %d (%v), want 0 before the flush", d, ok)
		}
		return nil
	})
	want = map[string]int{a + "/sending": 2, a + "/accepted": 1, b + "/sending": 1}
	if diff := cmp.Diff(want, counts()); diff != "" {
		t.Fatalf("after the acceptance and the claim, counters (-want +got):\n%s", diff)
	}
	var recount int
	if err := o.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT sender, state, COUNT(*) AS n FROM outbox_items GROUP BY sender, state) r
		LEFT JOIN outbox_counts c USING (sender, state) WHERE c.n IS NOT r.n`).Scan(&recount); err != nil || recount != 0 {
		t.Fatalf("%d counters differ from a recount (%v)", recount, err)
	}
	wantHist := map[string][]string{
		items[0].key: {"sending@10", "accepted@20"},
		items[1].key: {"sending@10"},
		items[2].key: {"sending@20"},
		items[3].key: {"sending@10"},
	}
	for key, w := range wantHist {
		it, err := o.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range it.History[1:] { // (the first: queued, read from the item)
			got = append(got, fmt.Sprintf("%v@%d", h.State, nanos(h.At)))
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("history of %s (-want +got):\n%s", key, diff)
		}
	}
}
