package outbox_test

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// An item whose stored message cannot be decoded (a row corrupted in the
// database) fails with the reason "stored message unreadable": counted,
// evented, never sent, never lost; the rest of its lane and the other
// lanes go on.
func TestUnreadableStoredMessageFailsUnsent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		var mu sync.Mutex
		failed := map[string]string{}
		o, _ := openSQLite(t, outbox.WithObserver(func(e outbox.Event) {
			if e.State == outbox.StateFailed {
				mu.Lock()
				failed[e.Key] = e.Reason
				mu.Unlock()
			}
		}))
		c := newClient(t, meta)
		var keys []string
		for i, to := range []int{0, 1, 1, 2} {
			tk, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(to), "m"+fmtInt(int64(i))))
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, tk.Key)
		}
		bad := keys[1] // the head of recipient 1's lane
		if _, err := o.DB().ExecContext(t.Context(), `UPDATE outbox_items SET message = '{"to": broken' WHERE ikey = ?`, bad); err != nil {
			t.Fatal(err)
		}
		runFor(t, o, c, time.Minute)

		it := mustGet(t, o, bad)
		if it.State != outbox.StateFailed || it.Reason != "stored message unreadable" {
			t.Fatalf("the corrupted item: %v %q, want failed %q", it.State, it.Reason, "stored message unreadable")
		}
		if h := it.History; len(h) == 0 || h[len(h)-1].State != outbox.StateFailed {
			t.Fatalf("its history %+v does not end failed", h)
		}
		mu.Lock()
		reason, ok := failed[bad]
		mu.Unlock()
		if !ok || reason != "stored message unreadable" {
			t.Fatalf("no failed event for it (%q, %v)", reason, ok)
		}
		for _, k := range []string{keys[0], keys[2], keys[3]} {
			if it := mustGet(t, o, k); it.State != outbox.StateAccepted {
				t.Fatalf("item %s: %v %q, want accepted", k, it.State, it.Reason)
			}
		}
		if got := meta.Accepted(); got != 3 {
			t.Fatalf("the server accepted %d messages, want 3 (the corrupted one never sent)", got)
		}
		if n := len(meta.Requests()); n != 3 {
			t.Fatalf("%d requests reached the server, want 3", n)
		}
		st, err := o.Snapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.Counts[outbox.StateFailed] != 1 || st.Counts[outbox.StateAccepted] != 3 ||
			st.Counts[outbox.StateQueued] != 0 || st.Counts[outbox.StateSending] != 0 {
			t.Fatalf("counts %v, want 1 failed and 3 accepted", st.Counts)
		}
	})
}

// A burst one of whose stored messages cannot be decoded fails whole,
// unsent, with the same reason (a burst is checked, held and dropped as
// one); Run goes on with the other lanes.
func TestUnreadableBurstItemFailsItsBurst(t *testing.T) {
	for _, bad := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("item=%d", bad), func(t *testing.T) { testUnreadableBurstItem(t, bad) })
	}
}

func testUnreadableBurstItem(t *testing.T, bad int) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		o, _ := openSQLite(t)
		c := newClient(t, meta)
		burst, err := o.EnqueueBurst(t.Context(), from,
			cloudapi.Text(recipient(1), "b0"), cloudapi.Text(recipient(1), "b1"), cloudapi.Text(recipient(1), "b2"))
		if err != nil {
			t.Fatal(err)
		}
		other, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(2), "other"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.DB().ExecContext(t.Context(), `UPDATE outbox_items SET message = '{"to": broken' WHERE ikey = ?`, burst[bad].Key); err != nil {
			t.Fatal(err)
		}
		runFor(t, o, c, time.Minute)

		for _, tk := range burst {
			if it := mustGet(t, o, tk.Key); it.State != outbox.StateFailed || it.Reason != "stored message unreadable" {
				t.Errorf("burst item %s: %v %q, want failed %q", tk.Key, it.State, it.Reason, "stored message unreadable")
			}
		}
		if it := mustGet(t, o, other.Key); it.State != outbox.StateAccepted {
			t.Fatalf("the other lane's item: %v %q, want accepted", it.State, it.Reason)
		}
		if n := len(meta.Requests()); n != 1 {
			t.Fatalf("%d requests reached the server, want 1 (no bubble of the burst)", n)
		}
	})
}
