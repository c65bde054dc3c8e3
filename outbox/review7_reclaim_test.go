//go:build review7

package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// heldTwice holds a request before its body is read (before the write
// mark) and again after Meta's answer (an answer that comes late).
type heldTwice struct {
	inner         http.RoundTripper
	arrived       chan struct{}
	releaseBefore chan struct{}
	answered      chan error
	releaseAfter  chan struct{}
}

func (h heldTwice) RoundTrip(r *http.Request) (*http.Response, error) {
	h.arrived <- struct{}{}
	<-h.releaseBefore
	resp, err := h.inner.RoundTrip(r)
	h.answered <- err
	<-h.releaseAfter
	return resp, err
}

// secondDispatchHeld is a Tracer whose end of the second dispatch of key
// waits until released: the send's goroutine descheduled between the
// Client's return and handing its outcome to Run.
type secondDispatchHeld struct {
	key     string
	n       atomic.Int32
	ended   chan error
	release chan struct{}
}

func (s *secondDispatchHeld) Inject(context.Context) string { return "" }

func (s *secondDispatchHeld) Dispatch(ctx context.Context, it outbox.Item, _ string) (context.Context, func(error)) {
	if it.Key != s.key || s.n.Add(1) != 2 {
		return ctx, func(error) {}
	}
	return ctx, func(err error) {
		s.ended <- err
		<-s.release
	}
}

// Review 7: a write mark names the item (its id) and the worker, not the
// claim. Worker A's send S1 waits in its Client, unmarked, when A's lease
// ends (a pause); the item is swept back to the queue (unwritten) and A's
// own Run claims it again (claim 2, same owner). Its send S2 is refused
// locally (cloudapi.ErrInProgress: S1 still holds the key). S1 then
// resumes: its mark, meant for claim 1, finds the item sending under A's
// name and a live lease (claim 2's), commits, and S1 is written and
// accepted. S2's outcome then queues the item again, "not sent", and
// another worker (its own Client, which does not know the key) sends it
// a second time: Meta accepts the message twice. Seen once in
// TestReview7ChaosWorkers (Postgres, pauses, marks: "key r231-m5 accepted
// 2 times"). Wanted: Meta accepts dup-1 once. A mark should name its
// claim (e.g. AND unwritten_at = the claim's sent_at), so that S1's mark
// fails as "claim lost" and S1 is never written.
func TestReview7MarkMeetsALaterClaim(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { markMeetsALaterClaim(t, "sqlite:"+filepath.Join(t.TempDir(), "outbox.db")) })
	t.Run("postgres", func(t *testing.T) { markMeetsALaterClaim(t, requirePostgres(t)) })
}

func markMeetsALaterClaim(t *testing.T, dsn string) {
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond))
	tr := &secondDispatchHeld{key: "dup-1", ended: make(chan error, 1), release: make(chan struct{})}
	a, err := outbox.Open(t.Context(), dsn, outbox.WithWriteMarks(), outbox.WithLease(time.Minute), outbox.WithConcurrency(8),
		outbox.WithIdleWake(20*time.Millisecond), outbox.WithTracer(tr))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	m := cloudapi.Text(recipient(1), "x")
	m.IdempotencyKey = "dup-1"
	if _, err := a.Enqueue(t.Context(), from, m); err != nil {
		t.Fatal(err)
	}
	inner := &http.Transport{}
	t.Cleanup(inner.CloseIdleConnections)
	held := heldTwice{inner: inner, arrived: make(chan struct{}, 1), releaseBefore: make(chan struct{}, 1),
		answered: make(chan error, 1), releaseAfter: make(chan struct{}, 1)}
	ca, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithPairLimiter(pairlimit.New(fastPairs)),
		cloudapi.WithHTTPClient(&http.Client{Transport: held}))
	if err != nil {
		t.Fatal(err)
	}
	doneA, stopA := startRun(t.Context(), a, ca)
	within(t, held.arrived, "S1") // claim 1, unmarked

	// A's lease ends; a sweep queues the unwritten claim again
	// (sqlSweepUnwritten's update).
	now := time.Now().UnixNano()
	if _, err := a.DB().ExecContext(t.Context(), fmt.Sprintf(`UPDATE outbox_items SET state = 'queued', state_at = %d, due_at = %d,
		reason = 'not sent: swept', lease_until = 0, attempts = attempts - 1, unwritten_at = 0 WHERE ikey = 'dup-1'`, now, now)); err != nil {
		t.Fatal(err)
	}
	// A's Run claims it again; S2 is refused as in progress.
	if err := within(t, tr.ended, "S2"); !errorsIsInProgress(err) {
		t.Fatalf("S2: %v, want cloudapi.ErrInProgress", err)
	}
	held.releaseBefore <- struct{}{} // S1 resumes: its mark, then its write
	s1 := within(t, held.answered, "S1's answer")
	t.Logf("S1 (claim 1) after claim 2 was made: %v", s1)
	close(tr.release) // S2's outcome: the item goes back to the queue
	if s1 == nil {
		waitItem(t, a, "dup-1", func(it outbox.Item) bool { return it.State == outbox.StateQueued })
	} else {
		held.releaseAfter <- struct{}{} // not written: its send ends now
	}
	// A stops claiming (its late answer still to come); another worker,
	// with a Client of its own, takes the queue.
	stopA()
	b, err := outbox.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cb, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithPairLimiter(pairlimit.New(fastPairs)))
	if err != nil {
		t.Fatal(err)
	}
	doneB, stopB := startRun(t.Context(), b, cb)
	it := waitItem(t, b, "dup-1", func(it outbox.Item) bool { return it.State.Final() })
	if s1 == nil {
		held.releaseAfter <- struct{}{} // A's late answer
	}
	select {
	case err := <-doneA:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("A's Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("A's Run did not return")
	}
	stopRun(t, doneB, stopB)

	n := 0
	for _, r := range meta.Requests() {
		if r.CallbackData == "dup-1" && r.Accepted {
			n++
		}
	}
	t.Logf("dup-1: %v (%s), attempts %d; Meta accepted it %d times", it.State, it.Reason, it.Attempts, n)
	if n != 1 {
		t.Errorf("Meta accepted dup-1 %d times, want 1", n)
	}
}

func errorsIsInProgress(err error) bool { return errors.Is(err, cloudapi.ErrInProgress) }
