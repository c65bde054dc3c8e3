package outbox_test

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// An item the Client refuses locally, again and again, while a send with
// its key stays in progress (cloudapi.ErrInProgress) goes back to its
// lane's head each time, its attempt uncounted. Its history says so once:
// before, every bounce added two rows (sending, queued), without bound
// while the key stayed in progress. Here A's send is held while B's
// attempts bounce at least three times; the item's history then holds one
// row for all of them, which counts them, and ends accepted.
func TestInProgressBouncesKeepHistoryBounded(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		inProgressBounces(t, "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"))
	})
	t.Run("postgres", func(t *testing.T) { inProgressBounces(t, requirePostgres(t)) })
}

func inProgressBounces(t *testing.T, dsn string) {
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond))
	var bounces atomic.Int64
	o := oneMarked(t, dsn, "bounce-1", outbox.WithObserver(func(e outbox.Event) {
		if e.State == outbox.StateQueued && strings.Contains(e.Reason, "in progress") {
			bounces.Add(1)
		}
	}))
	held, c := heldClient(t, meta, 2, cloudapi.WithPairLimiter(pairlimit.New(fastPairs)))
	doneA, stopA := startRun(t.Context(), o, c)
	within(t, held.arrived, "A's claim")
	if _, err := o.DB().ExecContext(t.Context(), `UPDATE outbox_items SET lease_until = 1 WHERE state = 'sending'`); err != nil {
		t.Fatal(err)
	}
	doneB, stopB := startRun(t.Context(), o, c)
	deadline := time.Now().Add(30 * time.Second)
	for bounces.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bounces in 30 s, want 3", bounces.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	held.release <- struct{}{} // A resumes: its mark finds the claim gone
	within(t, held.finished, "A's request")
	within(t, held.arrived, "B's next attempt")
	held.release <- struct{}{}
	if err := within(t, held.finished, "B's request"); err != nil {
		t.Fatalf("B's request: %v", err)
	}
	it := waitItem(t, o, "bounce-1", func(it outbox.Item) bool { return it.State.Final() })
	stopRun(t, doneB, stopB)
	stopRun(t, doneA, stopA)
	n := bounces.Load()
	var rows []string
	inProgress := 0
	for _, h := range it.History {
		rows = append(rows, h.State.String()+" "+h.Reason)
		if strings.Contains(h.Reason, "in progress") {
			inProgress++
		}
	}
	got := strings.Join(rows, "\n")
	if it.State != outbox.StateAccepted || it.Attempts != 1 {
		t.Errorf("%v (%s) after %d attempts, want accepted after 1", it.State, it.Reason, it.Attempts)
	}
	// queued, sending (A), queued (taken over), sending (B), queued (in
	// progress, n times), sending, accepted.
	if len(it.History) > 7 || inProgress != 1 {
		t.Errorf("after %d bounces, history of %d rows (%d of them in progress), want at most 7 (1):\n%s", n, len(it.History), inProgress, got)
	}
	if !strings.Contains(got, "times)") {
		t.Errorf("after %d bounces, the history does not count them:\n%s", n, got)
	}
}

// The same for items the Client refuses because its idempotency memory
// is full of sends in flight (cloudapi.ErrIdempotencyMemoryFull): 60
// items, a memory of 4, answers 200 ms late, so that most items bounce
// more than once. Every item ends accepted, with one row for its bounces.
func TestMemoryFullBouncesKeepHistoryBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		o, _ := openSQLite(t)
		c := slowClient(t, meta, 200*time.Millisecond, cloudapi.WithIdempotencyMemory(4, time.Hour))
		keys := enqueueReview8(t, o, 60)
		runFor(t, o, c, 30*time.Minute)
		counted := 0
		for _, k := range keys {
			it := mustGet(t, o, k)
			full := 0
			var rows []string
			for _, h := range it.History {
				rows = append(rows, h.State.String()+" "+h.Reason)
				if strings.Contains(h.Reason, "memory full") {
					full++
				}
				if strings.Contains(h.Reason, "times)") {
					counted++
				}
			}
			// queued, sending, queued (memory full, n times), sending,
			// accepted.
			if it.State != outbox.StateAccepted || full > 1 || len(it.History) > 5 {
				t.Errorf("%s: %v, history of %d rows (%d of them memory full), want accepted, at most 5 (1):\n%s",
					k, it.State, len(it.History), full, strings.Join(rows, "\n"))
			}
		}
		if counted == 0 {
			t.Errorf("no item bounced twice: the test proves nothing")
		}
	})
}
