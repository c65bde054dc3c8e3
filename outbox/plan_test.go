package outbox

import (
	"path/filepath"
	"strings"
	"testing"
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
	rows, err := o.db.Query("EXPLAIN QUERY PLAN "+pickSQL(o.d), 0, 10)
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
	if !strings.Contains(all, "outbox_items_queued") || strings.Contains(all, "TEMP B-TREE") {
		t.Fatalf("pick plan:\n%s", all)
	}
}
