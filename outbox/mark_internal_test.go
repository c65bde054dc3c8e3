package outbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wapace/wapace/cloudapi"
)

// markFixture opens an outbox holding n items claimed by owner "w1" with
// marks (sending, unwritten, leased for ever), and returns it with their
// ids.
func markFixture(t *testing.T, n int) (*Outbox, []int64) {
	t.Helper()
	o, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	var ids []int64
	for i := range n {
		if _, err := o.Enqueue(t.Context(), "106540352242922", cloudapi.Text(fmt.Sprintf("+23769%07d", i), "x")); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := o.db.QueryContext(t.Context(), `UPDATE outbox_items SET state = 'sending', owner = 'w1', sent_at = 7, unwritten_at = 7,
		lease_until = 9000000000000000000 RETURNING id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	return o, ids
}

func unwritten(t *testing.T, o *Outbox) int {
	t.Helper()
	var n int
	if err := o.db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM outbox_items WHERE unwritten_at <> 0`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Concurrent marks share statements, and each returns only once its own
// mark is committed.
func TestMarkGroupConcurrent(t *testing.T) {
	const n = 40
	o, ids := markFixture(t, n)
	r := &runner{o: o, owner: "w1"}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, id := range ids {
		wg.Go(func() { errs[i] = r.mark(t.Context(), id) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("mark %d: %v", i, err)
		}
	}
	if u := unwritten(t, o); u != 0 {
		t.Errorf("%d items still unwritten", u)
	}
	if r.marks.leading || len(r.marks.queue) != 0 {
		t.Errorf("group left leading=%v with %d waiting", r.marks.leading, len(r.marks.queue))
	}
}

// A mark of a claim this Run does not hold (lost to another worker, or
// its lease ended) fails with errNotMarked and marks nothing; the others
// of its batch succeed.
func TestMarkGroupClaimLost(t *testing.T) {
	t.Run("taken over", func(t *testing.T) { markLost(t, `UPDATE outbox_items SET owner = 'w2' WHERE id = ?`) })
	t.Run("lease ended", func(t *testing.T) { markLost(t, `UPDATE outbox_items SET lease_until = 1 WHERE id = ?`) })
}

func markLost(t *testing.T, lose string) {
	o, ids := markFixture(t, 3)
	if _, err := o.db.ExecContext(t.Context(), lose, ids[1]); err != nil {
		t.Fatal(err)
	}
	r := &runner{o: o, owner: "w1"}
	for i, id := range ids {
		err := r.mark(t.Context(), id)
		if i == 1 {
			if !errors.Is(err, errNotMarked) {
				t.Errorf("lost claim: %v, want errNotMarked", err)
			}
		} else if err != nil {
			t.Errorf("mark %d: %v", i, err)
		}
	}
	if u := unwritten(t, o); u != 1 {
		t.Errorf("%d items unwritten, want 1 (the lost claim's, not ours to mark)", u)
	}
}

// A call whose ctx ends while it waits for its batch leaves at once,
// and the group goes on.
func TestMarkGroupLeave(t *testing.T) {
	o, ids := markFixture(t, 2)
	r := &runner{o: o, owner: "w1"}
	// Hold the only connection so that the leader's statement waits.
	conn, err := o.db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	lead := make(chan error, 1)
	go func() { lead <- r.mark(t.Context(), ids[0]) }()
	for {
		r.marks.mu.Lock()
		busy := r.marks.leading && len(r.marks.queue) == 0
		r.marks.mu.Unlock()
		if busy {
			break // the leader has taken its batch
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := r.mark(ctx, ids[1]); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	conn.Close()
	if err := <-lead; err != nil {
		t.Errorf("leader: %v", err)
	}
	r.marks.mu.Lock()
	defer r.marks.mu.Unlock()
	if r.marks.leading || len(r.marks.queue) != 0 {
		t.Errorf("group left leading=%v with %d waiting", r.marks.leading, len(r.marks.queue))
	}
}
