package outbox

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wapace/wapace/cloudapi"
)

// The pick walks the queued index in order and stops at its LIMIT: a plan
// that sorts every queued row made each claim O(queue) (a 10,000-message
// campaign took minutes of wall time).
func TestPickPlanUsesQueuedIndex(t *testing.T) {
	o, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	all := queryPlan(t, o, pickSQL(o.d), 0, 10)
	if !strings.Contains(all, "outbox_items_queued") || strings.Contains(all, "TEMP B-TREE") {
		t.Fatalf("pick plan:\n%s", all)
	}
}

// The batch of acceptances looks each key up in the key index: a plan
// that scans the index of sending items reads the whole list of keys once
// per item sending (quadratic in the batch and the sends in flight). It
// is the plan SQLite chooses once the file has statistics (ANALYZE, PRAGMA
// optimize) unless the statement rules the sending index out.
func TestAcceptPlanLooksUpKeys(t *testing.T) {
	o := queuedOutbox(t, 300)
	if _, err := o.db.Exec(`UPDATE outbox_items SET state = 'sending', owner = 'w' WHERE id % 5 = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := o.db.Exec(`ANALYZE`); err != nil {
		t.Fatal(err)
	}
	all := queryPlan(t, o, acceptSQL(o.d), 0, `{"k":"w"}`, "owner")
	if !strings.Contains(all, "SEARCH outbox_items USING INDEX sqlite_autoindex_outbox_items_1 (ikey=?)") || strings.Contains(all, "SCAN outbox_items") {
		t.Fatalf("accept plan:\n%s", all)
	}
}

// queryPlan returns SQLite's EXPLAIN QUERY PLAN of q with args, one step
// a line.
func queryPlan(t *testing.T, o *Outbox, q string, args ...any) string {
	t.Helper()
	rows, err := o.db.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	all := strings.Join(plan, "\n")
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}

// TestBurstPlanUsesTheLiveIndex: reading a burst's items after its head
// searches the lane's live items (outbox_items_live), never scans the
// table: a partial index serves a query only if the query repeats the
// index's condition, and state = 'queued' alone does not.
func TestBurstPlanUsesTheLiveIndex(t *testing.T) {
	o := queuedOutbox(t, 300)
	if _, err := o.db.Exec(`ANALYZE`); err != nil {
		t.Fatal(err)
	}
	all := queryPlan(t, o, burstSQL(o.d), "lane", "burst", 0)
	if !strings.Contains(all, "USING INDEX outbox_items_live") || strings.Contains(all, "SCAN outbox_items") {
		t.Fatalf("burst plan:\n%s", all)
	}
}

// queuedOutbox opens an outbox in a temporary file holding n queued
// texts, one per recipient, closed when t ends.
func queuedOutbox(t *testing.T, n int) *Outbox {
	t.Helper()
	o, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	var msgs []cloudapi.Message
	for i := range n {
		msgs = append(msgs, cloudapi.Text(fmt.Sprintf("+1555%07d", i), "x"))
	}
	if _, err := o.EnqueueMany(t.Context(), "106540352242922", msgs...); err != nil {
		t.Fatal(err)
	}
	return o
}
