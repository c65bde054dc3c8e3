package outbox_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// Two Runs in one process share one Client. Run A claims an item and its
// send waits in the Client, its request not written; A's lease ends (as
// after a long pause) and Run B takes the claim over (its write mark
// proves that nothing was written) and sends the item through the same
// Client, which refuses it locally: a send with its key is still in
// progress. Nothing was written, so the item goes back to the queue, its
// attempt uncounted (not submitted_unknown, which would leave a message
// that never left to reconciliation); once A's send has given up (its
// mark finds the claim gone), B sends it, once.
func TestInProgressDuplicateIsNotSent(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		inProgressDuplicate(t, "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"))
	})
	t.Run("postgres", func(t *testing.T) { inProgressDuplicate(t, requirePostgres(t)) })
}

// inProgressScene is the scene of the tests of a key in progress: Run A's
// send of the outbox's one item is held in the shared Client, its request
// not written, and Run B has taken A's claim over.
type inProgressScene struct {
	meta *cloudapitest.Server
	o    *outbox.Outbox
	held heldTransport
	stop func() // stops B, then A
}

// takenOver sets the scene: an outbox at dsn (oneMarked, with opts)
// holding one item keyed key, Run A started, its send held, its lease
// ended, and Run B started with the same Client.
func takenOver(t *testing.T, dsn, key string, opts ...outbox.Option) inProgressScene {
	t.Helper()
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond))
	o := oneMarked(t, dsn, key, opts...)
	held, c := heldClient(t, meta, 2, cloudapi.WithPairLimiter(pairlimit.New(fastPairs)))
	doneA, stopA := startRun(t.Context(), o, c)
	within(t, held.arrived, "A's claim") // its request not written

	// A's lease ends; B, a second Run with the same Client, takes over.
	if _, err := o.DB().ExecContext(t.Context(), `UPDATE outbox_items SET lease_until = 1 WHERE state = 'sending'`); err != nil {
		t.Fatal(err)
	}
	doneB, stopB := startRun(t.Context(), o, c)
	return inProgressScene{meta: meta, o: o, held: held, stop: func() {
		stopRun(t, doneB, stopB)
		stopRun(t, doneA, stopA)
	}}
}

func inProgressDuplicate(t *testing.T, dsn string) {
	sc := takenOver(t, dsn, "inprog-1")
	meta, o, held := sc.meta, sc.o, sc.held
	// B's attempt: the Client refuses it while A's send is in progress.
	it := waitItem(t, o, "inprog-1", func(it outbox.Item) bool { return len(it.History) >= 5 })
	if got := it.History[4]; got.State != outbox.StateQueued || !strings.Contains(got.Reason, "in progress") {
		t.Fatalf("after the Client refused B's attempt: %v (%s), want queued (a send with its key in progress)", got.State, got.Reason)
	}
	if it.Attempts != 0 && it.State == outbox.StateQueued {
		t.Errorf("attempts %d while queued again, want 0 (nothing was written)", it.Attempts)
	}

	held.release <- struct{}{} // A resumes: its mark finds the claim gone
	if err := within(t, held.finished, "A's request"); err == nil || !strings.Contains(err.Error(), "claim was lost") {
		t.Errorf("A's request: %v, want the lost claim's error", err)
	}
	within(t, held.arrived, "B's next attempt") // once A's send has ended
	held.release <- struct{}{}
	if err := within(t, held.finished, "B's request"); err != nil {
		t.Fatalf("B's request: %v", err)
	}
	it = waitItem(t, o, "inprog-1", func(it outbox.Item) bool { return it.State.Final() })
	sc.stop()
	if it.State != outbox.StateAccepted || it.Attempts != 1 {
		t.Errorf("%v (%s) after %d attempts, want accepted after 1", it.State, it.Reason, it.Attempts)
	}
	var states []string
	for _, h := range it.History {
		states = append(states, h.State.String())
	}
	// (B may find A's send still in progress more than once.)
	got := strings.Join(states, " ")
	if !strings.HasPrefix(got, "queued sending queued sending queued sending") || !strings.HasSuffix(got, "queued sending accepted") ||
		strings.Contains(got, "submitted_unknown") {
		t.Errorf("history %s, want queued sending queued (A's claim taken over) sending queued (in progress) ... sending accepted", got)
	}
	// (A's connection may carry its request's headers, never its body.)
	carried := 0
	for _, r := range meta.Requests() {
		if r.CallbackData == "inprog-1" || len(r.Body) > 0 {
			carried++
		}
	}
	if carried != 1 || meta.Accepted() != 1 {
		t.Errorf("Meta got the message %d times and accepted %d, want 1 and 1", carried, meta.Accepted())
	}
}

// waitItem polls key's item until done holds (30 s at most).
func waitItem(t *testing.T, o *outbox.Outbox, key string, done func(outbox.Item) bool) outbox.Item {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		it, err := o.Get(context.WithoutCancel(t.Context()), key)
		if err != nil {
			t.Fatal(err)
		}
		if done(it) {
			return it
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v (%s), history %+v", key, it.State, it.Reason, it.History)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

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
	var bounces atomic.Int64
	sc := takenOver(t, dsn, "bounce-1", outbox.WithObserver(func(e outbox.Event) {
		if e.State == outbox.StateQueued && strings.Contains(e.Reason, "in progress") {
			bounces.Add(1)
		}
	}))
	o, held := sc.o, sc.held
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
	sc.stop()
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
