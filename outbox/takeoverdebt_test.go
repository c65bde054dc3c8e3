package outbox_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
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

// halfReadTransport never answers: it reads the body of the first request
// it is given (its write mark is committed: it may have reached Meta) and
// none of the others' (never written), reports each on arrived, and waits
// for the request's end.
type halfReadTransport struct {
	n       *atomic.Int64
	arrived chan struct{}
}

func (h halfReadTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.n.Add(1) == 1 && r.Body != nil {
		if _, err := io.ReadAll(r.Body); err != nil {
			return nil, err
		}
	}
	h.arrived <- struct{}{}
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// A worker takes over the claims of a worker whose lease ended: one
// claim's request was written (its mark committed), the other's never
// was. The pair of the written one stays charged (its lane's next item
// waits out the pair's debt); the pair of the one never written owes
// nothing for it, and the takeover sends it at once instead of holding it
// for a debt no message made.
func TestTakeoverChargesOnlyWrittenClaims(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		takeoverDebt(t, "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"))
	})
	t.Run("postgres", func(t *testing.T) { takeoverDebt(t, requirePostgres(t)) })
}

func takeoverDebt(t *testing.T, dsn string) {
	meta := cloudapitest.NewServer(t)
	a, err := outbox.Open(t.Context(), dsn, outbox.WithWriteMarks(), outbox.WithLease(time.Minute),
		outbox.WithConcurrency(2), outbox.WithStopGrace(0))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// Two lanes, two items each.
	for _, k := range []string{"l0-a", "l1-a", "l0-b", "l1-b"} {
		m := cloudapi.Text(recipient(int(k[1]-'0')), k)
		m.IdempotencyKey = k
		if _, err := a.Enqueue(t.Context(), from, m); err != nil {
			t.Fatal(err)
		}
	}
	tr := halfReadTransport{n: new(atomic.Int64), arrived: make(chan struct{}, 2)}
	ca, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithPairLimiter(pairlimit.New(fastPairs)),
		cloudapi.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	doneA, stopA := startRun(t.Context(), a, ca)
	defer stopRun(t, doneA, stopA)
	within(t, tr.arrived, "A's first claim")
	within(t, tr.arrived, "A's second claim") // both heads claimed by A, one of them written
	q := func(s string) string {
		if strings.HasPrefix(dsn, "postgres") {
			return strings.ReplaceAll(s, "?", "$1")
		}
		return s
	}
	var written string
	if err := a.DB().QueryRowContext(t.Context(), `SELECT ikey FROM outbox_items WHERE state = 'sending' AND unwritten_at = 0`).Scan(&written); err != nil {
		t.Fatal(err)
	}
	lane := written[:2]
	unwritten := map[string]string{"l0": "l1-a", "l1": "l0-a"}[lane]
	// A dies: its leases end. B takes over with a pair rule whose debt
	// (an hour a message) no test waits out.
	if _, err := a.DB().ExecContext(t.Context(), `UPDATE outbox_items SET lease_until = 1 WHERE state = 'sending'`); err != nil {
		t.Fatal(err)
	}
	b, err := outbox.Open(t.Context(), dsn, outbox.WithWriteMarks())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	slow := pairlimit.Policy{Interval: time.Hour, Burst: 45, BurstWindow: time.Second}
	cb, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithPairLimiter(pairlimit.New(slow)))
	if err != nil {
		t.Fatal(err)
	}
	doneB, stopB := startRun(t.Context(), b, cb)
	defer stopRun(t, doneB, stopB)

	// held reports whether key's item is queued waiting for a pair debt
	// (due in more than half an hour).
	held := func(key string) bool {
		var st string
		var due int64
		if err := b.DB().QueryRowContext(t.Context(), q(`SELECT state, due_at FROM outbox_items WHERE ikey = ?`), key).Scan(&st, &due); err != nil {
			t.Fatal(err)
		}
		return st == "queued" && time.Unix(0, due).After(time.Now().Add(30*time.Minute))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		it, err := b.Get(context.WithoutCancel(t.Context()), unwritten)
		if err != nil {
			t.Fatal(err)
		}
		if it.State == outbox.StateAccepted {
			break
		}
		if held(unwritten) {
			t.Fatalf("%s, never written by the dead worker, is held for its pair's debt (%v)", unwritten, it.State)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v (%s) after 30 s", unwritten, it.State, it.Reason)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The written claim's pair stays charged: the next item of its lane
	// waits.
	next := lane + "-b"
	for !held(next) {
		if time.Now().After(deadline) {
			t.Fatalf("%s, behind a claim that may have reached Meta, is not held for its pair's debt", next)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for k, want := range map[string]outbox.State{written: outbox.StateSubmittedUnknown, unwritten: outbox.StateAccepted, next: outbox.StateQueued} {
		it, err := b.Get(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		if it.State != want {
			t.Errorf("%s: %v (%s), want %v", k, it.State, it.Reason, want)
		}
	}
	if n := len(meta.Requests()); n != 1 || meta.Requests()[0].CallbackData != unwritten {
		t.Errorf("Meta got %d requests (%+v), want only %s's", n, meta.Requests(), unwritten)
	}
}

// A worker paused past its lease (nobody took its claim over meanwhile)
// must not write its request when it resumes: its mark finds the lease
// ended, so that a claim whose lease ended unmarked provably never
// writes (a takeover does not charge its pair for it). The item goes back
// to its lane's head, its attempt uncounted, and is sent once.
func TestWriteMarkAfterLeaseEnded(t *testing.T) {
	meta := cloudapitest.NewServer(t)
	o := oneMarked(t, "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"), "paused-1")
	held, c := heldClient(t, meta, 2)
	done, stop := startRun(t.Context(), o, c)
	within(t, held.arrived, "the claim") // claimed, its request not written
	if _, err := o.DB().ExecContext(t.Context(), `UPDATE outbox_items SET lease_until = 1 WHERE state = 'sending'`); err != nil {
		t.Fatal(err)
	}
	held.release <- struct{}{} // the worker resumes
	if err := within(t, held.finished, "the first request"); err == nil || !strings.Contains(err.Error(), "claim was lost") {
		t.Fatalf("the request after the lease ended: %v, want the lost claim's error", err)
	}
	within(t, held.arrived, "the second claim")
	held.release <- struct{}{}
	if err := within(t, held.finished, "the second request"); err != nil {
		t.Fatal(err)
	}
	it := waitItem(t, o, "paused-1", func(it outbox.Item) bool { return it.State.Final() })
	stopRun(t, done, stop)
	var states []string
	for _, h := range it.History {
		states = append(states, h.State.String())
	}
	if got := strings.Join(states, " "); it.State != outbox.StateAccepted || it.Attempts != 1 || got != "queued sending queued sending accepted" {
		t.Errorf("%v after %d attempts, history %s; want accepted after 1, queued sending queued sending accepted", it.State, it.Attempts, got)
	}
	if meta.Accepted() != 1 {
		t.Errorf("Meta accepted %d, want 1", meta.Accepted())
	}
}

// within receives from ch, failing the test after 30 s.
func within[T any](t *testing.T, ch chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: nothing after 30 s", what)
		panic("unreachable")
	}
}

// A worker that picks a lane another worker just sent a burst on charges
// the pair for the whole burst (n bubbles owe n intervals), not for one
// message: charged for one, it would send the lane's next item inside the
// burst's debt and draw 131056.
func TestPostgresLaneAfterAnotherWorkersBurst(t *testing.T) {
	dsn := requirePostgres(t)
	// The fake's rule a little faster than the workers' (it judges
	// arrivals, they judge claims).
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(900*time.Millisecond, 45, 900*time.Millisecond))
	pol := pairlimit.Policy{Interval: time.Second, Burst: 45, BurstWindow: time.Second}
	open := func() (*outbox.Outbox, *cloudapi.Client) {
		o, err := outbox.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithPairLimiter(pairlimit.New(pol)))
		if err != nil {
			t.Fatal(err)
		}
		return o, c
	}
	a, ca := open()
	b, cb := open()
	// B has run once (its limiter is seeded from the database) before A
	// sends the burst.
	done, stop := startRun(t.Context(), b, cb)
	time.Sleep(100 * time.Millisecond)
	stopRun(t, done, stop)
	var msgs []cloudapi.Message
	for j := range 3 {
		m := cloudapi.Text(recipient(3), "x")
		m.IdempotencyKey = fmt.Sprintf("r003-m%d", j)
		msgs = append(msgs, m)
	}
	if _, err := a.EnqueueBurst(t.Context(), from, msgs...); err != nil {
		t.Fatal(err)
	}
	done, stop = startRun(t.Context(), a, ca)
	waitItem(t, a, "r003-m2", func(it outbox.Item) bool { return it.State.Final() })
	stopRun(t, done, stop)
	m := cloudapi.Text(recipient(3), "x")
	m.IdempotencyKey = "r003-m3"
	if _, err := b.Enqueue(t.Context(), from, m); err != nil {
		t.Fatal(err)
	}
	done, stop = startRun(t.Context(), b, cb)
	waitItem(t, b, "r003-m3", func(it outbox.Item) bool { return it.State.Final() })
	stopRun(t, done, stop)
	checkDelivery(t, meta, 4, false)
}
