package outbox_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

// gated holds each request to a recipient whose digits end in a gated
// suffix until its gate is closed (ignoring the request's context, like a
// slow network).
type gated struct {
	next  http.RoundTripper
	gates map[string]chan struct{} // recipient digits -> gate
}

func (g gated) RoundTrip(r *http.Request) (*http.Response, error) {
	body := ""
	if r.GetBody != nil {
		if rc, err := r.GetBody(); err == nil {
			var b strings.Builder
			buf := make([]byte, 4096)
			for {
				n, err := rc.Read(buf)
				b.Write(buf[:n])
				if err != nil {
					break
				}
			}
			body = b.String()
		}
	}
	for to, gate := range g.gates {
		if strings.Contains(body, to) {
			<-gate
		}
	}
	return g.next.RoundTrip(r)
}

// A send that ends while Run is still recording earlier outcomes must
// wake Run: its outcome is recorded, and its slot refilled, at once, not a
// third of a lease later (and, when Run is stopping, not never).
func TestSendEndingDuringFinishWakesRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		gates := map[string]chan struct{}{}
		for i := 1; i <= 3; i++ {
			gates[strings.TrimPrefix(recipient(i), "+")] = make(chan struct{})
		}
		hc := &http.Client{Transport: gated{next: meta.Client().Transport, gates: gates}}
		c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(hc), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		inObserver, release := make(chan struct{}), make(chan struct{})
		o, _ := openSQLite(t, outbox.WithConcurrency(16), outbox.WithObserver(func(e outbox.Event) {
			if e.State == outbox.StateAccepted {
				once.Do(func() { close(inObserver); <-release })
			}
		}))
		var keys []string
		for i := 1; i <= 3; i++ {
			tk, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(i), "x"))
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, tk.Key)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- o.Run(ctx, c) }()
		// The Client paces the three sends (its throughput limit): a
		// second later all are in flight, held by their gates.
		time.Sleep(time.Second)
		synctest.Wait()
		close(gates[strings.TrimPrefix(recipient(1), "+")])
		close(gates[strings.TrimPrefix(recipient(2), "+")])
		<-inObserver // Run is recording the first two outcomes
		close(gates[strings.TrimPrefix(recipient(3), "+")])
		// Released together after a second on the network, the three
		// requests take new slots 12.5 ms apart rather than bunch at Meta
		// (the Client's write-time check): the third has ended 25 ms on.
		time.Sleep(50 * time.Millisecond)
		synctest.Wait() // the third send has ended
		close(release)
		synctest.Wait() // no clock time passes
		if it := mustGet(t, o, keys[2]); it.State != outbox.StateAccepted {
			t.Errorf("third outcome not recorded when its send ended: %v", it.State)
		}
		cancel()
		<-done
	})
}

// A status webhook for an earlier attempt of an item the ResendPolicy
// queued again settles it: the resend is never sent (the message was
// delivered after all).
func TestLateStatusCancelsQueuedResend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		pairs := pairlimit.New(pairlimit.Meta)
		c := newClient(t, meta, cloudapi.WithPairLimiter(pairs))
		o, _ := openSQLite(t, outbox.WithClient(c), outbox.WithResend(outbox.ResendPolicy{After: time.Hour, Max: 1}))
		meta.Script(cloudapitest.Failure{Status: 502})
		b, _ := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(2), "b"))
		runFor(t, o, c, time.Minute)
		if it := mustGet(t, o, b.Key); it.State != outbox.StateSubmittedUnknown {
			t.Fatalf("b: %v", it.State)
		}
		// Just before the resend, more messages for the same user: the
		// resend queues behind them, paced by the pair limit.
		time.Sleep(time.Hour - time.Minute - time.Second)
		for range 3 {
			if _, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(2), "more")); err != nil {
				t.Fatal(err)
			}
		}
		runFor(t, o, c, 3*time.Second)
		if it := mustGet(t, o, b.Key); it.State != outbox.StateQueued || it.Resends != 1 {
			t.Fatalf("b before the late status: %v resends %d", it.State, it.Resends)
		}
		// The status of b's first attempt arrives late: delivered.
		var rb cloudapitest.Request
		for _, r := range meta.Requests() {
			if r.CallbackData == b.Key {
				rb = r
			}
		}
		rb.MessageID = "wamid.B"
		n, err := webhook.Parse(meta.StatusBody(cloudapitest.Delivered(rb)))
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Reconcile(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		runFor(t, o, c, time.Minute)
		for _, r := range meta.Requests() {
			if r.CallbackData == b.Key+"#r1" {
				t.Fatal("b was sent again although its first attempt was delivered")
			}
		}
		if it := mustGet(t, o, b.Key); it.State != outbox.StateDelivered {
			t.Fatalf("b: %v (%s)", it.State, it.Reason)
		}
	})
}

// A caller's key that looks like a resend's ("K#r1") must not be mistaken
// for the resend of item K: the Client would refuse K's resend as a
// duplicate of the caller's message and the outbox would record K
// accepted, sent to nobody. Enqueue refuses such keys.
func TestResendSuffixReserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		o, _ := openSQLite(t, outbox.WithResend(outbox.ResendPolicy{After: time.Hour, Max: 1}))
		c := newClient(t, meta)
		meta.Script(cloudapitest.Failure{To: recipient(1), Status: 502})
		a := cloudapi.Text(recipient(1), "a")
		a.IdempotencyKey = "order"
		if _, err := o.Enqueue(t.Context(), from, a); err != nil {
			t.Fatal(err)
		}
		b := cloudapi.Text(recipient(2), "b")
		b.IdempotencyKey = "order#r1"
		_, err := o.Enqueue(t.Context(), from, b)
		var ve *cloudapi.ValidationError
		if errors.As(err, &ve) && ve.Field == "idempotency_key" {
			return // refused: nothing can be confused
		}
		if err != nil {
			t.Fatal(err)
		}
		runFor(t, o, c, 2*time.Hour)
		it := mustGet(t, o, "order")
		sent := 0
		for _, r := range meta.Requests() {
			if r.To == strings.TrimPrefix(recipient(1), "+") {
				sent++
			}
		}
		if it.State == outbox.StateAccepted && sent < 2 {
			t.Fatalf("order recorded accepted (%s, wamid %s) but its resend never reached Meta", it.Reason, it.MessageID)
		}
	})
}

// Restarting Run in the same process (same pair limiter, which already
// holds the recent sends) must not count those sends twice: a lane's next
// message goes at the pair's pace, not twice as late.
func TestRestartRunKeepsPairPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		pol := pairlimit.Policy{Interval: 6 * time.Second, Burst: 1, BurstWindow: 6 * time.Second}
		pairs := pairlimit.New(pol)
		c := newClient(t, meta, cloudapi.WithPairLimiter(pairs))
		o, _ := openSQLite(t, outbox.WithClient(c))
		start := time.Now()
		if _, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "a")); err != nil {
			t.Fatal(err)
		}
		runFor(t, o, c, time.Second)
		b, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "b"))
		if err != nil {
			t.Fatal(err)
		}
		for range 3 { // three restarts
			runFor(t, o, c, time.Second)
		}
		runFor(t, o, c, time.Minute)
		it := mustGet(t, o, b.Key)
		var at time.Time
		for _, tr := range it.History {
			if tr.State == outbox.StateSending {
				at = tr.At
			}
		}
		if d := at.Sub(start); d > pol.Interval+time.Second {
			t.Fatalf("second message of the lane sent %v after the first, want about %v", d, pol.Interval)
		}
	})
}

// interleaving is a shared pair store (as redisstore is across processes)
// in which another caller reserves a pair right after the first
// reservation, and gives its slot back right after that one is cancelled:
// two concurrent probes of one pair.
type interleaving struct {
	pairstore.Store
	mu      sync.Mutex
	armed   bool
	pending bool
	pair    pairstore.Pair
	other   pairstore.Ticket
}

func (s *interleaving) Reserve(ctx context.Context, p pairstore.Pair, t time.Time, cost, maxWait time.Duration) (pairstore.Ticket, bool, error) {
	s.flush(ctx, t)
	tk, ok, err := s.Store.Reserve(ctx, p, t, cost, maxWait)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.armed {
		s.armed = false
		s.other, _, _ = s.Store.Reserve(ctx, p, t, cost, maxWait)
		s.pair, s.pending = p, true
	}
	return tk, ok, err
}

// flush: the other caller gives its slot back.
func (s *interleaving) flush(ctx context.Context, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending {
		s.pending = false
		_, _ = s.Store.Cancel(ctx, s.pair, t, s.other)
	}
}

func (s *interleaving) Cancel(ctx context.Context, p pairstore.Pair, t time.Time, tk pairstore.Ticket) (bool, error) {
	ok, err := s.Store.Cancel(ctx, p, t, tk)
	s.flush(ctx, t)
	return ok, err
}

func (s *interleaving) Next(ctx context.Context, p pairstore.Pair, t time.Time) (time.Time, error) {
	s.flush(ctx, t)
	return s.Store.Next(ctx, p, t)
}

func (s *interleaving) Accept(ctx context.Context, p pairstore.Pair, t time.Time) error {
	s.flush(ctx, t)
	return s.Store.Accept(ctx, p, t)
}

// Run's look at a lane's pair before claiming its head spends nothing,
// even when another worker probes the pair at the same time: a probe by
// reservation left a phantom slot behind, and the lane's next message went
// a pair interval late.
func TestLaneCheckSpendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		pol := pairlimit.Policy{Interval: 6 * time.Second, Burst: 1, BurstWindow: 6 * time.Second}
		store := &interleaving{Store: pairlimit.NewMemoryStore(clock.New()), armed: true}
		pairs := pairlimit.New(pol, pairlimit.WithStore(store))
		c := newClient(t, meta, cloudapi.WithPairLimiter(pairs))
		o, _ := openSQLite(t, outbox.WithClient(c))
		start := time.Now()
		var keys []string
		for _, body := range []string{"a", "b"} {
			tk, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), body))
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, tk.Key)
		}
		runFor(t, o, c, time.Minute)
		var at time.Time
		for _, tr := range mustGet(t, o, keys[1]).History {
			if tr.State == outbox.StateSending {
				at = tr.At
			}
		}
		if d := at.Sub(start); d > pol.Interval+time.Second {
			t.Fatalf("second message of the lane sent %v after the first, want about %v", d, pol.Interval)
		}
	})
}

// Run stopped while a request is on the wire (past the stop grace, the
// network slow to notice the cancellation): whatever the answer, the item
// is never queued again, so it cannot be sent twice.
func TestStopMidSendNeverRequeuesAWrittenRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		gate := make(chan struct{})
		hc := &http.Client{Transport: gated{next: meta.Client().Transport, gates: map[string]chan struct{}{strings.TrimPrefix(recipient(1), "+"): gate}}}
		c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(hc), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		o, _ := openSQLite(t, outbox.WithStopGrace(time.Second))
		tk, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "x"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- o.Run(ctx, c) }()
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		cancel()
		time.Sleep(2 * time.Second) // past the grace: the send is cancelled
		synctest.Wait()
		close(gate) // the request reaches Meta after all
		<-done
		it := mustGet(t, o, tk.Key)
		if it.State == outbox.StateQueued {
			runFor(t, o, c, time.Minute)
		}
		n := 0
		for _, r := range meta.Requests() {
			if r.Accepted && r.CallbackData == tk.Key {
				n++
			}
		}
		if n > 1 {
			t.Fatalf("accepted %d times (state after the stop: %v %q)", n, it.State, it.Reason)
		}
		t.Logf("after the stop: %v %q; accepted %d", it.State, it.Reason, n)
	})
}

// lossy delivers each request, then loses the answer until the request's
// context ends.
type lossy struct{ next http.RoundTripper }

func (l lossy) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	if err == nil {
		resp.Body.Close()
	}
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// Run stopped while the answer to a delivered request is still awaited:
// the item becomes submitted_unknown, never queued again, and a restarted
// Run (a new process: a new Client) does not send it again.
func TestStopAwaitingAnswerIsUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(&http.Client{Transport: lossy{meta.Client().Transport}}), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		o, _ := openSQLite(t, outbox.WithStopGrace(time.Second))
		tk, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "x"))
		if err != nil {
			t.Fatal(err)
		}
		runFor(t, o, c, 100*time.Millisecond)
		it := mustGet(t, o, tk.Key)
		if it.State != outbox.StateSubmittedUnknown {
			t.Errorf("after the stop: %v %q, want submitted_unknown", it.State, it.Reason)
		}
		runFor(t, o, newClient(t, meta), time.Hour)
		n := 0
		for _, r := range meta.Requests() {
			if r.Accepted && r.CallbackData == tk.Key {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("accepted %d times", n)
		}
	})
}

// Run waiting for the database (here a caller's transaction, as EnqueueTx
// uses, holds SQLite's one connection) must not decide with the instant it
// read before waiting: an item whose deadline passed meanwhile is
// dead-lettered, never sent late.
func TestClaimUsesTheInstantOfTheClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		o, _ := openSQLite(t)
		c := newClient(t, meta)
		m := cloudapi.Text(recipient(1), "x")
		m.ExpiresAt = time.Now().Add(5 * time.Second)
		tk, err := o.Enqueue(t.Context(), from, m)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := o.DB().BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- o.Run(ctx, c) }()
		synctest.Wait() // Run waits for the connection
		time.Sleep(10 * time.Second)
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		<-done
		if it := mustGet(t, o, tk.Key); it.State != outbox.StateExpired {
			t.Errorf("item: %v (%s), want expired", it.State, it.Reason)
		}
		if n := len(meta.Requests()); n != 0 {
			t.Fatalf("%d requests reached Meta after the item's deadline", n)
		}
	})
}
