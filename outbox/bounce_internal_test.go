package outbox

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
)

func TestBounces(t *testing.T) {
	const r = "not sent: a send with its key is in progress in this process"
	for _, c := range []struct {
		name, got string
		want      int
		ok        bool
	}{
		{"once", r, 1, true},
		{"counted", r + " (2 times)", 2, true},
		{"many", r + " (12345 times)", 12345, true},
		{"another reason", "not sent: run stopped", 0, false},
		{"a longer reason", r + " and more", 0, false},
		{"trailing text", r + " (3 times) and more", 0, false},
		{"one time", r + " (1 times)", 0, false},
		{"negative", r + " (-3 times)", 0, false},
		{"padded", r + " (03 times)", 0, false},
		{"empty", "", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, ok := bounces(c.got, r)
			if n != c.want || ok != c.ok {
				t.Errorf("bounces(%q) = %d, %v; want %d, %v", c.got, n, ok, c.want, c.ok)
			}
			if ok && bounceReason(r, n) != c.got {
				t.Errorf("bounceReason(%d) = %q, want %q", n, bounceReason(r, n), c.got)
			}
		})
	}
}

// An item refused again and again by the lease's fence (each refusal
// naming another instant) keeps one history row for its bounces, as
// the other bounces do: the reason recorded leaves the instant out (the
// row's time says when).
func TestFencedBouncesFold(t *testing.T) {
	o, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	r := &runner{o: o, owner: "w1"}
	m := cloudapi.Text("+237690000001", "x")
	m.IdempotencyKey = "fenced"
	if _, err := o.Enqueue(t.Context(), "106540352242922", m); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	const bounces = 4
	for i := range bounces {
		at := now.Add(time.Duration(i) * time.Second)
		if _, err := o.db.ExecContext(t.Context(), `UPDATE outbox_items SET state = 'sending', owner = 'w1', attempts = attempts + 1,
			state_at = ?, lease_until = ? WHERE ikey = ?`, nanos(at), nanos(at.Add(time.Minute)), m.IdempotencyKey); err != nil {
			t.Fatal(err)
		}
		it := &claimed{Item: Item{Key: m.IdempotencyKey, Attempts: 1, State: StateSending}}
		// (The Client's attempts differ: one may have been refused
		// before the fence refused the next.)
		ferr := &cloudapi.SendError{State: cloudapi.StateNotSubmitted, Attempts: 1 + i%2,
			Err: fmt.Errorf("%w (it ended or ends at %v)", errFenced, at.UTC().Format(time.RFC3339Nano))}
		recordOutcome(t, r, t.Context(), at, finished{it: it, err: ferr})
	}
	got, err := o.Get(t.Context(), m.IdempotencyKey)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, h := range got.History {
		rows = append(rows, h.State.String()+" "+h.Reason)
	}
	// queued (enqueued), sending, queued (fenced, 4 times).
	if len(got.History) != 3 || got.State != StateQueued || got.Attempts != 0 ||
		!strings.HasSuffix(got.History[2].Reason, fmt.Sprintf("(%d times)", bounces)) {
		t.Errorf("after %d fenced bounces: %v, %d attempts, history:\n%s", bounces, got.State, got.Attempts, strings.Join(rows, "\n"))
	}
}
