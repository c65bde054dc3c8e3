package outbox

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/wapace/wapace/cloudapi"
)

// A claim listing an item that is no longer queued fails (the caller
// rolls back) instead of moving it to sending and recording a transition
// out of queued that did not happen.
func TestClaimMovedRefusesItemsNotQueued(t *testing.T) {
	ctx := t.Context()
	o, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var refs []claimRef
	for _, to := range []string{"+237690000001", "+237690000002"} {
		tk, err := o.Enqueue(ctx, "106540352242922", cloudapi.Text(to, "x"))
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := o.db.QueryRowContext(ctx, `SELECT id FROM outbox_items WHERE ikey = ?`, tk.Key).Scan(&id); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, claimRef{id, "106540352242922"})
		if len(refs) == 2 {
			if _, err := o.Expire(ctx, tk.Key, "gone"); err != nil {
				t.Fatal(err)
			}
		}
	}
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	err = o.claimMoved(ctx, tx, nil, refs, "w1", int64(2e18), int64(1), int64(0))
	if !errors.Is(err, ErrWrongState) {
		t.Fatalf("claiming a queued and an expired item: %v", err)
	}
	var st string
	if err := tx.QueryRowContext(ctx, `SELECT state FROM outbox_items WHERE id = ?`, refs[1].id).Scan(&st); err != nil || st != "expired" {
		t.Fatalf("the expired item is %q (%v)", st, err)
	}
}
