package outbox_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/internal/clocktest"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// sharedStore is a cloudapi.Store in memory, shared by the Clients of one
// test as redisstore is by processes: they pace one number as one.
type sharedStore struct {
	pairstore.Store
	tp throughputstore.Store
}

func (s sharedStore) Throughput() throughputstore.Store { return s.tp }

func newSharedStore() sharedStore {
	return sharedStore{pairlimit.NewMemoryStore(nil), throughputstore.NewMemoryStore(nil)}
}

// workerSends counts the items each of several workers has sending (from
// their recorded transitions) and the most they had at once, summed over
// the workers still alive.
type workerSends struct {
	mu      sync.Mutex
	sending []int
	dead    []bool
	total   int // summed over the live workers
	peak    int
}

func newWorkerSends(n int) *workerSends {
	return &workerSends{sending: make([]int, n), dead: make([]bool, n)}
}

func (w *workerSends) observer(i int) outbox.Option {
	return outbox.WithObserver(func(e outbox.Event) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.dead[i] {
			return
		}
		d := 0
		switch e.State {
		case outbox.StateSending:
			d = 1
		case outbox.StateQueued:
		default:
			d = -1
		}
		w.sending[i] += d
		w.total += d
		w.peak = max(w.peak, w.total)
	})
}

// kill leaves worker i out of the sum from now on (its claims are lost
// with it).
func (w *workerSends) kill(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dead[i] = true
	w.total -= w.sending[i]
}

// most returns the most sends the live workers had in flight at once,
// and starts counting the most anew.
func (w *workerSends) most() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.peak
	w.peak = w.total
	return p
}

// TestPostgresWorkersShareANumber: four Runs, each on its own Outbox over
// one Postgres database, send one number's campaign through Clients that
// share the number's figure (a Store), Meta answering in 400 ms. Together
// they keep about what the number needs in flight, not four times that
// (each Run sized for the whole figure, the campaign's claims waiting in
// the Clients for the number's slots), and the number stays busy. One Run
// then dies (its Outbox closed under it, leaving its heartbeat behind, as
// a killed process does): the other three count three workers within a
// few seconds, and the number stays busy.
func TestPostgresWorkersShareANumber(t *testing.T) {
	dsn := requirePostgres(t)
	const (
		id      = "106540352242931"
		mps     = 100
		workers = 4
		n       = 1600
		latency = 400 * time.Millisecond
		// A send's cycle T is the latency and a batch's wait and commit,
		// ~0.45 s (more on a loaded machine). A Run alone wants
		// mps x (1.5 T + 30 ms) + 1 for the number and as much again for
		// a number at Meta's default figure it does not know yet: ~70 +
		// ~58. Four Runs sharing the figures: 4 x (~19 + ~15), ~140. Four
		// each sizing for the whole figures: 4 x ~130, all of it claimed
		// (the queue is deep).
		mostInFlight = 260
	)
	meta := cloudapitest.NewServer(t, cloudapitest.WithNumberThroughput(id, mps), cloudapitest.WithHistory(0))
	store := newSharedStore()
	sends := newWorkerSends(workers)
	obs := make([]*outbox.Outbox, workers)
	clients := make([]*cloudapi.Client, workers)
	for i := range workers {
		clients[i] = slowClient(t, meta, latency, cloudapi.WithStore(store), cloudapi.WithNumberThroughput(id, mps))
		o, err := outbox.Open(t.Context(), dsn, sends.observer(i), outbox.WithLease(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		obs[i] = o
	}
	enqueueCampaign(t, obs[0], id, n)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errs := make(chan error, workers)
	for i, o := range obs {
		go func() { errs <- o.Run(ctx, clients[i]) }()
	}
	watch := clocktest.Watch(t)
	waitFor := func(what string, limit time.Duration, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("not within %v: %s", limit, what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	counting := func(k int) func() bool {
		return func() bool {
			for _, o := range obs[:k] {
				if p := outbox.Peers(o); len(p) != 1 || p[0] != k {
					return false
				}
			}
			return true
		}
	}
	// Started together, the Runs count each other within a beat or two;
	// the claims made meanwhile (each Run as if alone) are sent within a
	// second or two.
	waitFor("the Runs count four workers", 10*time.Second, counting(workers))
	time.Sleep(2 * time.Second)
	mostStart := sends.most()
	settledAt := time.Now()
	waitFor("a third accepted", time.Minute, func() bool { return meta.Accepted() >= n/3 })
	most4 := sends.most()

	// Kill the last Run: its Outbox's database closes under it.
	killedAt := time.Now()
	sends.kill(workers - 1)
	obs[workers-1].Close()
	if err := <-errs; !errors.Is(err, outbox.ErrClosed) {
		t.Errorf("the killed Run returned %v, want ErrClosed", err)
	}
	waitFor("the others count three workers", 10*time.Second, counting(workers-1))
	t.Logf("the others counted %d workers %v after the kill", workers-1, time.Since(killedAt).Round(time.Millisecond))
	grownAt := time.Now()
	sends.most()
	waitFor("the campaign sent", 2*time.Minute, func() bool {
		st, err := obs[0].Snapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return st.Counts[outbox.StateQueued] == 0
	})
	most3 := sends.most()
	cancel()
	for range workers - 1 {
		if err := <-errs; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v", err)
		}
	}

	// Every message accepted at most once; 0 refusals.
	seen := map[string]int{}
	var before, after []time.Time
	for _, r := range meta.Requests() {
		if !r.Accepted {
			continue
		}
		seen[r.To]++
		if r.At.After(settledAt) && r.At.Before(killedAt) {
			before = append(before, r.At)
		} else if r.At.After(grownAt) {
			after = append(after, r.At)
		}
	}
	for to, k := range seen {
		if k > 1 {
			t.Errorf("%s accepted %d times", to, k)
		}
	}
	if k := meta.Count(errcodes.ThroughputLimit) + meta.Count(errcodes.PairRateLimit); k != 0 {
		t.Errorf("%d refusals", k)
	}
	rate := func(at []time.Time) float64 {
		slices.SortFunc(at, time.Time.Compare)
		if len(at) < 2 {
			return 0
		}
		return float64(len(at)-1) / at[len(at)-1].Sub(at[0]).Seconds()
	}
	r4, r3 := rate(before), rate(after)
	t.Logf("starting: at most %d sending; 4 Runs: at most %d sending, %.1f msg/s (%.1f %%); 3 Runs: at most %d sending, %.1f msg/s (%.1f %%)",
		mostStart, most4, r4, 100*r4/mps, most3, r3, 100*r3/mps)
	if most4 > mostInFlight || most3 > mostInFlight {
		t.Errorf("at most %d and %d sending at once, want at most %d: the Runs claim for the number more than it needs", most4, most3, mostInFlight)
	}
	// Starved Runs would keep fewer sends in flight than the number's
	// answers take (mps x latency), whatever the machine's load.
	if need := int(mps * latency / time.Second); most4 < need || most3 < need {
		t.Errorf("at most %d and %d sending at once, want at least %d (%d msg/s answered in %v): the number is starved", most4, most3, need, mps, latency)
	}
	// And it stays busy, where the machine is not overcommitted by other
	// work (a slot that passes while the sender waits for a CPU is lost):
	// at most 3 runnable tasks per CPU more than its cores, as the
	// realtime suite's bar.
	stall, step := watch()
	t.Logf("the test's longest stall %v, the wall clock stepped by %v", stall.Round(time.Millisecond), step.Round(time.Millisecond))
	switch load := loadAverage(t); {
	case load > float64(runtime.NumCPU()+3):
		t.Logf("load average %.1f on %d CPUs: the rate bar does not apply", load, runtime.NumCPU())
	case stall > time.Second:
		// The process got no CPU for a second (a virtual machine's
		// host busy elsewhere, which the load average inside does not
		// show): slots passed unused, as they would for any sender.
		t.Logf("the process stalled for %v: the rate bar does not apply", stall)
	case step > 50*time.Millisecond || step < -50*time.Millisecond:
		// The Store's instants are the wall clock's, the one clock
		// processes share (internal/instant): a step moves them all.
		t.Logf("the wall clock was stepped by %v: the rate bar does not apply", step)
	default:
		for _, r := range []float64{r4, r3} {
			if r < 0.8*mps {
				t.Errorf("%.1f msg/s, want at least 80 %% of %d: the number is not kept busy", r, mps)
			}
		}
	}
	if len(seen) > n {
		t.Errorf("%d accepted, want at most %d", len(seen), n)
	}
}

// loadAverage is the machine's load average over the last minute (0 where
// /proc/loadavg cannot be read).
func loadAverage(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
