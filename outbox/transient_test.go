package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// errLog collects the errors Run reports while riding them out.
type errLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errLog) observe(err error, _ time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

// await waits (bounded) until an error has been reported.
func (l *errLog) await(t *testing.T, limit time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if len(l.list()) > 0 {
			return
		}
	}
	t.Fatalf("no error reported within %v", limit)
}

func (l *errLog) list() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// drainAll waits (bounded) until no item is live, failing if Run returned
// meanwhile.
func drainAll(t *testing.T, o *outbox.Outbox, runErr <-chan error, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case err := <-runErr:
			t.Fatalf("Run returned %v while work remained", err)
		default:
		}
		st, err := o.Snapshot(t.Context())
		if err == nil && st.Counts[outbox.StateQueued]+st.Counts[outbox.StateSending] == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("items still live after %v", limit)
}

// acceptedOnce checks that each of keys was sent once and is accepted.
func acceptedOnce(t *testing.T, o *outbox.Outbox, meta *cloudapitest.Server, keys []string) {
	t.Helper()
	sent := map[string]int{}
	for _, r := range meta.Requests() {
		sent[r.CallbackData]++
	}
	for _, k := range keys {
		if it := mustGet(t, o, k); it.State != outbox.StateAccepted || sent[k] != 1 {
			t.Errorf("%s: %v after %d requests, want accepted after 1", k, it.State, sent[k])
		}
	}
}

// startRun runs o.Run with c until the returned cancel; Run's result
// comes on the channel.
func startRun(ctx context.Context, o *outbox.Outbox, c *cloudapi.Client) (<-chan error, context.CancelFunc) {
	runCtx, cancel := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- o.Run(runCtx, c) }()
	return runErr, cancel
}

// stopRun cancels Run and checks that it returned context.Canceled.
func stopRun(t *testing.T, runErr <-chan error, cancel context.CancelFunc) {
	t.Helper()
	cancel()
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

// drainThenStop waits up to limit for o to drain, then stops Run (checking
// it returned context.Canceled), and returns Drain's error.
func drainThenStop(t *testing.T, o *outbox.Outbox, runErr <-chan error, cancel context.CancelFunc, limit time.Duration) error {
	t.Helper()
	dctx, dcancel := context.WithTimeout(t.Context(), limit)
	derr := o.Drain(dctx)
	dcancel()
	stopRun(t, runErr, cancel)
	return derr
}

// enqueueKeyed enqueues n texts keyed prefix-0 ... and returns the keys.
func enqueueKeyed(t *testing.T, o *outbox.Outbox, prefix string, n int) []string {
	t.Helper()
	var keys []string
	for i := range n {
		m := cloudapi.Text(recipient(i), "x")
		m.IdempotencyKey = fmt.Sprintf("%s-%d", prefix, i)
		keys = append(keys, m.IdempotencyKey)
		if _, err := o.Enqueue(t.Context(), from, m); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// holdWriteLock is another process holding the SQLite outbox's write lock
// (a connection of its own, BEGIN IMMEDIATE) until commit is called.
func holdWriteLock(t *testing.T, dsn string) (commit func()) {
	t.Helper()
	ctx := t.Context()
	other, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite:")+"?_pragma=busy_timeout(1)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
	}
}

// terminateBackends terminates every other connection to the database,
// as an administrator or a failover does.
func terminateBackends(t *testing.T, admin *sql.DB) {
	t.Helper()
	if _, err := admin.ExecContext(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
}

// openRidingOut opens the outbox at dsn waking every 10 ms and reporting
// Run's errors to log, with a fake Meta and a Client of 10,000 msg/s.
func openRidingOut(t *testing.T, dsn string, log *errLog) (*outbox.Outbox, *cloudapitest.Server, *cloudapi.Client) {
	t.Helper()
	o, err := outbox.Open(t.Context(), dsn, outbox.WithIdleWake(10*time.Millisecond), outbox.WithRunErrorObserver(log.observe))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(10000))
	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithThroughput(10000))
	if err != nil {
		t.Fatal(err)
	}
	return o, meta, c
}

// TestRunRidesOutSQLiteBusy: issue 23 item 7. Another process held the
// write lock longer than the busy timeout (10 s): Run returned SQLITE_BUSY
// and the application had to restart it. It reports the error and tries
// again; everything is sent once.
func TestRunRidesOutSQLiteBusy(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("holds a SQLite write lock past its 10 s busy timeout")
	}
	var log errLog
	o, dsn := openSQLite(t, outbox.WithRunErrorObserver(log.observe))
	meta := cloudapitest.NewServer(t)
	c := newClient(t, meta)
	keys := enqueueKeyed(t, o, "busy", 5)
	// The other process: a connection of its own holding the write lock.
	commit := holdWriteLock(t, dsn)
	runErr, cancel := startRun(t.Context(), o, c)
	defer cancel()
	log.await(t, time.Minute) // SQLITE_BUSY, after the 10 s busy timeout
	commit()
	drainAll(t, o, runErr, time.Minute)
	acceptedOnce(t, o, meta, keys)
	errs := log.list()
	if len(errs) == 0 || !strings.Contains(errs[0].Error(), "SQLITE_BUSY") && !strings.Contains(errs[0].Error(), "locked") {
		t.Errorf("reported errors %v, want SQLITE_BUSY", errs)
	}
	stopRun(t, runErr, cancel)
}

// TestPostgresRunRidesOutTerminatedBackends: issue 23 item 7. An
// administrator (or a failover) terminating the outbox's connections
// (pg_terminate_backend) ended Run. It rides it out: every message is
// sent once, none is lost.
func TestPostgresRunRidesOutTerminatedBackends(t *testing.T) {
	dsn := requirePostgres(t)
	ctx := t.Context()
	var log errLog
	o, meta, c := openRidingOut(t, dsn, &log)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	runErr, cancel := startRun(ctx, o, c)
	defer cancel()
	var keys []string
	for i := range 200 {
		m := cloudapi.Text(recipient(i), "x")
		m.IdempotencyKey = fmt.Sprintf("term-%d", i)
		for {
			_, err := o.Enqueue(ctx, from, m)
			if err == nil {
				break
			}
			// Enqueue reports the terminated connection to its caller,
			// who tries again (nothing is stored twice: same key).
			time.Sleep(time.Millisecond)
		}
		keys = append(keys, m.IdempotencyKey)
		if i%20 == 10 {
			terminateBackends(t, admin)
		}
	}
	drainAll(t, o, runErr, 2*time.Minute)
	acceptedOnce(t, o, meta, keys)
	if len(log.list()) == 0 {
		t.Error("no error reported: the backends were not terminated under Run")
	}
	stopRun(t, runErr, cancel)
}

// TestRunStopsOnPermanentError: an error that waiting does not fix (the
// tables are gone) still ends Run, with the error.
func TestRunStopsOnPermanentError(t *testing.T) {
	t.Parallel()
	o, _ := openSQLite(t)
	meta := cloudapitest.NewServer(t)
	if _, err := o.DB().Exec(`DROP TABLE outbox_items`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := o.Run(ctx, newClient(t, meta)); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run = %v, want the database error", err)
	}
}

// pgProxy forwards TCP connections to a Postgres server, and can play a
// restart: every connection is cut and new ones are refused until it is up
// again.
type pgProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func newPGProxy(t *testing.T, target string) *pgProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *pgProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
			p.wg.Go(func() {
				io.Copy(pair[0], pair[1])
				pair[0].Close()
				pair[1].Close()
			})
		}
	}
}

// cut closes every connection.
func (p *pgProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *pgProxy) setDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
	if down {
		p.cut()
	}
}

// TestPostgresRunRidesOutRestart: issue 23 item 7. A Postgres restart (every
// connection cut, new ones refused for a while) ended Run. It rides it out:
// every message is sent once.
func TestPostgresRunRidesOutRestart(t *testing.T) {
	dsn := requirePostgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newPGProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	ctx := t.Context()
	var log errLog
	o, meta, c := openRidingOut(t, u.String(), &log)
	runErr, cancel := startRun(ctx, o, c)
	defer cancel()
	var keys []string
	for i := range 150 {
		m := cloudapi.Text(recipient(i), "x")
		m.IdempotencyKey = fmt.Sprintf("restart-%d", i)
		for {
			if _, err := o.Enqueue(ctx, from, m); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		keys = append(keys, m.IdempotencyKey)
		if i == 50 || i == 100 {
			proxy.setDown(true)
			time.Sleep(1500 * time.Millisecond) // Run's retries meet refused connections
			proxy.setDown(false)
		}
	}
	drainAll(t, o, runErr, 2*time.Minute)
	acceptedOnce(t, o, meta, keys)
	if len(log.list()) == 0 {
		t.Error("no error reported: the restart did not reach Run")
	}
	stopRun(t, runErr, cancel)
}

// gateTransport holds every request until open is closed.
type gateTransport struct {
	open    chan struct{}
	arrived chan struct{} // gets one value per request
	next    http.RoundTripper
}

func (g *gateTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	g.arrived <- struct{}{}
	<-g.open
	return g.next.RoundTrip(r)
}

// TestRunKeepsOutcomesItCannotRecord: sends answered while another
// process holds the SQLite write lock past the busy timeout. Their
// outcomes could not be recorded: Run once dropped them, leaving the
// items sending until their lease ended and then submitted_unknown. They
// are kept and recorded once the lock is free: accepted, each sent once.
func TestRunKeepsOutcomesItCannotRecord(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("holds a SQLite write lock past its 10 s busy timeout")
	}
	var log errLog
	o, dsn := openSQLite(t, outbox.WithRunErrorObserver(log.observe))
	meta := cloudapitest.NewServer(t)
	const n = 4
	gate := &gateTransport{open: make(chan struct{}), arrived: make(chan struct{}, n), next: meta.Client().Transport}
	c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(&http.Client{Transport: gate}), cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	keys := enqueueKeyed(t, o, "unrecorded", n)
	runErr, cancel := startRun(ctx, o, c)
	defer cancel()
	for range n {
		<-gate.arrived // every item claimed (committed) and in flight
	}
	commit := holdWriteLock(t, dsn)
	close(gate.open) // Meta answers; Run cannot record it
	log.await(t, time.Minute)
	if st, err := o.Snapshot(ctx); err != nil || st.Counts[outbox.StateSending] != n {
		t.Errorf("while the lock is held: %v, %v; want every item still sending", st.Counts, err)
	}
	commit()
	drainAll(t, o, runErr, time.Minute)
	acceptedOnce(t, o, meta, keys)
	if len(log.list()) == 0 {
		t.Error("no error reported")
	}
	stopRun(t, runErr, cancel)
}

// TestPostgresListenerSurvivesTermination: the LISTEN connection that wakes
// Run for other processes' enqueues was terminated (pg_terminate_backend)
// and never came back: with a long idle wake, Run slept through new work.
// It listens again.
func TestPostgresListenerSurvivesTermination(t *testing.T) {
	dsn := requirePostgres(t)
	ctx := t.Context()
	a, err := outbox.Open(ctx, dsn, outbox.WithIdleWake(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := outbox.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	meta := cloudapitest.NewServer(t)
	runErr, cancel := startRun(ctx, a, newClient(t, meta))
	defer cancel()
	enqueue := func(key string, to int) {
		m := cloudapi.Text(recipient(to), "x")
		m.IdempotencyKey = key
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := b.Enqueue(ctx, from, m); err == nil {
				return
			} else if time.Now().After(deadline) {
				t.Fatal(err)
			}
		}
	}
	await := func(key string) {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if it, err := b.Get(ctx, key); err == nil && it.State == outbox.StateAccepted {
				return
			}
		}
		t.Fatalf("%s not sent within 30 s: Run was not woken", key)
	}
	enqueue("listen-1", 1)
	await("listen-1")
	terminateBackends(t, admin)
	enqueue("listen-2", 2)
	t0 := time.Now()
	await("listen-2")
	t.Logf("listen-2 sent after %v", time.Since(t0))
	stopRun(t, runErr, cancel)
}
