package outbox_test

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// gateHeld holds every request before the Client's gate has run (before
// its body is read): a send waiting for its slot, or its connection,
// while its worker is paused. It reports each arrival and each end.
type gateHeld struct {
	inner   http.RoundTripper
	arrived chan string // the request's path
	ended   chan error
	release chan struct{} // closed: every request goes on
}

func (g gateHeld) RoundTrip(r *http.Request) (*http.Response, error) {
	g.arrived <- r.URL.Path
	<-g.release
	resp, err := g.inner.RoundTrip(r)
	g.ended <- err
	return resp, err
}

// gateHeldClient is a Client to meta whose requests a gateHeld holds
// until its release is closed.
func gateHeldClient(t *testing.T, meta *cloudapitest.Server) (gateHeld, *cloudapi.Client) {
	t.Helper()
	inner := &http.Transport{}
	t.Cleanup(inner.CloseIdleConnections)
	held := gateHeld{inner: inner, arrived: make(chan string, 4), ended: make(chan error, 4), release: make(chan struct{})}
	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithPairLimiter(pairlimit.New(fastPairs)),
		cloudapi.WithHTTPClient(&http.Client{Transport: held}))
	if err != nil {
		t.Fatal(err)
	}
	return held, c
}

// observerStall stalls Run's goroutine (its observer is called there)
// at key's claim, until released: a worker whose Run cannot
// renew its leases while its sends go on.
type observerStall struct {
	key     string
	once    sync.Once
	stalled chan struct{}
	release chan struct{}
}

func (s *observerStall) observe(e outbox.Event) {
	if e.Key != s.key || e.State != outbox.StateSending {
		return
	}
	s.once.Do(func() {
		close(s.stalled)
		<-s.release
	})
}

// A worker whose lease ended while a send of its waited (it could not
// renew: stalled, or paused) writes nothing of what it held once it goes
// on: another worker took the lane over meanwhile, and Meta receives the
// lane in order, each message once. Without write marks (the default)
// only the lease's fence stops the late write: Meta received fence-2
// before fence-1 at 070f5ea.
func TestStalledWorkerWritesNothingTakenOver(t *testing.T) {
	for _, marks := range []bool{false, true} {
		t.Run(map[bool]string{false: "no marks", true: "marks"}[marks], func(t *testing.T) {
			stalledWorker(t, marks)
		})
	}
}

func stalledWorker(t *testing.T, marks bool) {
	const lease = 300 * time.Millisecond
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(fastPairs.Interval, 45, fastPairs.BurstWindow))
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "outbox.db")
	stall := &observerStall{key: "stall", stalled: make(chan struct{}), release: make(chan struct{})}
	opts := []outbox.Option{outbox.WithLease(lease), outbox.WithConcurrency(4), outbox.WithStopGrace(0), outbox.WithObserver(stall.observe)}
	if marks {
		opts = append(opts, outbox.WithWriteMarks())
	}
	a, err := outbox.Open(t.Context(), dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	enqueue := func(o *outbox.Outbox, to, key string) {
		t.Helper()
		m := cloudapi.Text(to, key)
		m.IdempotencyKey = key
		if _, err := o.Enqueue(t.Context(), from, m); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(a, recipient(1), "fence-1")
	enqueue(a, recipient(1), "fence-2")

	held, ca := gateHeldClient(t, meta)
	doneA, stopA := startRun(t.Context(), a, ca)
	within(t, held.arrived, "fence-1's request")
	// Another lane's item stalls A's Run once claimed: no renewal.
	enqueue(a, recipient(2), "stall")
	within(t, stall.stalled, "A's stall")

	b, err := outbox.Open(t.Context(), dsn, outbox.WithIdleWake(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cb, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithPairLimiter(pairlimit.New(fastPairs)))
	if err != nil {
		t.Fatal(err)
	}
	doneB, stopB := startRun(t.Context(), b, cb)
	waitItem(t, b, "fence-2", func(it outbox.Item) bool { return it.State.Final() })

	close(held.release) // A's held send goes on
	err = within(t, held.ended, "fence-1's request's end")
	t.Logf("A's late send of fence-1: %v", err)
	close(stall.release)
	stopRun(t, doneB, stopB)
	stopRun(t, doneA, stopA)

	var order []string
	for _, r := range meta.Requests() {
		if r.To == strings.TrimPrefix(recipient(1), "+") && r.Accepted {
			order = append(order, r.CallbackData)
		}
	}
	t.Logf("Meta accepted the lane as %v", order)
	if i, j := slices.Index(order, "fence-1"), slices.Index(order, "fence-2"); j < 0 || (i > j) {
		t.Errorf("Meta accepted the lane as %v: fence-1 after fence-2, or fence-2 missing", order)
	}
	for _, k := range []string{"fence-1", "fence-2"} {
		if n := countOf(order, k); n > 1 {
			t.Errorf("Meta accepted %s %d times", k, n)
		}
	}
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// dispatchCount is a Tracer that counts the sends Run starts, by key.
type dispatchCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (d *dispatchCount) Inject(context.Context) string { return "" }

func (d *dispatchCount) Dispatch(ctx context.Context, it outbox.Item, _ string) (context.Context, func(error)) {
	d.mu.Lock()
	d.n[it.Key]++
	d.mu.Unlock()
	return ctx, func(error) {}
}

func (d *dispatchCount) of(key string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[key]
}

// A Run never claims an item again while its own send of it waits: the
// item was taken over (its claim's lease ended) and queued again, and
// that send's mark, outcome or fence would otherwise be taken for the new
// claim's. The late send's mark fails (its claim is gone), nothing is
// written, and the Run claims the item again only once that send has
// ended: Meta accepts it once. (At 070f5ea the Run claimed it again at
// once and again, each send refused as in progress; review 7 showed the
// late send's mark committing against such a claim, and the message
// accepted twice.)
func TestRunNeverHoldsTwoClaimsOfAnItem(t *testing.T) {
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(fastPairs.Interval, 45, fastPairs.BurstWindow))
	sends := &dispatchCount{n: map[string]int{}}
	a, _ := openSQLite(t, outbox.WithWriteMarks(), outbox.WithLease(time.Minute), outbox.WithConcurrency(4),
		outbox.WithIdleWake(20*time.Millisecond), outbox.WithTracer(sends))
	m := cloudapi.Text(recipient(1), "x")
	m.IdempotencyKey = "dup-1"
	if _, err := a.Enqueue(t.Context(), from, m); err != nil {
		t.Fatal(err)
	}
	held, ca := gateHeldClient(t, meta)
	doneA, stopA := startRun(t.Context(), a, ca)
	within(t, held.arrived, "dup-1's request") // claimed, not marked

	// Taken over: another worker's sweep of an unwritten claim whose
	// lease ended (sqlSweepUnwritten's update).
	now := time.Now().UnixNano()
	if _, err := a.DB().ExecContext(t.Context(), `UPDATE outbox_items SET state = 'queued', state_at = ?, due_at = ?,
		reason = 'swept', lease_until = 0, attempts = attempts - 1, unwritten_at = 0 WHERE ikey = 'dup-1'`, now, now); err != nil {
		t.Fatal(err)
	}
	// Run wakes (another lane's item goes) and its idle wakes come and
	// go: dup-1 stays queued while its first send waits.
	poke := cloudapi.Text(recipient(2), "poke")
	poke.IdempotencyKey = "poke"
	if _, err := a.Enqueue(t.Context(), from, poke); err != nil {
		t.Fatal(err)
	}
	within(t, held.arrived, "poke's request")
	// (Without the rule, Run claimed it again within about 300 ms.)
	time.Sleep(time.Second)
	if n := sends.of("dup-1"); n != 1 {
		t.Errorf("Run started %d sends of dup-1 while its first waited, want 1", n)
	}
	if it, err := a.Get(t.Context(), "dup-1"); err != nil || it.State != outbox.StateQueued {
		t.Errorf("dup-1 while A's send of it waits: %v, %v; want queued", it.State, err)
	}
	close(held.release)
	it := waitItem(t, a, "dup-1", func(it outbox.Item) bool { return it.State.Final() })
	stopRun(t, doneA, stopA)
	n := 0
	for _, r := range meta.Requests() {
		if r.CallbackData == "dup-1" && r.Accepted {
			n++
		}
	}
	if it.State != outbox.StateAccepted || n != 1 {
		t.Errorf("dup-1: %v (%s), accepted by Meta %d times; want accepted once", it.State, it.Reason, n)
	}
}
