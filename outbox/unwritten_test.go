package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// stuckTransport never answers: with read, it reads each request's body
// whole first (so that the request may have reached Meta) and notes its
// key in a file of dir; without, it reads nothing (the request never
// leaves). Either way it then waits for ever.
type stuckTransport struct {
	read bool
	dir  string
}

func (s stuckTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.read && r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		var m struct {
			Key string `json:"biz_opaque_callback_data"`
		}
		if json.Unmarshal(b, &m) == nil && m.Key != "" {
			_ = os.WriteFile(filepath.Join(s.dir, m.Key), nil, 0o600)
		}
	}
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// stuckSender is a sender process whose requests never end (see
// stuckTransport): it claims what it can and waits to be killed.
func stuckSender(dsn string, read bool, dir string) int {
	ctx := context.Background()
	o, err := outbox.Open(ctx, dsn, outbox.WithLease(300*time.Millisecond), outbox.WithWriteMarks())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer o.Close()
	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL("http://127.0.0.1:9"),
		cloudapi.WithHTTPClient(&http.Client{Transport: stuckTransport{read: read, dir: dir}}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Fprintln(os.Stderr, "run:", o.Run(ctx, c))
	return 3
}

// A sender claims messages and is killed with SIGKILL before any of their
// requests was written: after the dead claims' lease, the next worker
// queues them again (their requests provably never left) and sends each
// once, in order, instead of leaving them submitted_unknown. Claims
// whose requests were read by the transport (they may have reached Meta)
// stay submitted_unknown and are never sent again.
func TestKill9BeforeWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sender processes")
	}
	if runtime.GOOS == "windows" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("needs processes and SIGKILL")
	}
	for _, read := range []bool{false, true} {
		name := "never-written"
		if read {
			name = "maybe-written"
		}
		t.Run(name, func(t *testing.T) { killBeforeWrite(t, read) })
	}
}

func killBeforeWrite(t *testing.T, read bool) {
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond))
	dir := t.TempDir()
	marks := filepath.Join(dir, "read")
	if err := os.Mkdir(marks, 0o700); err != nil {
		t.Fatal(err)
	}
	dsn := "sqlite:" + filepath.Join(dir, "outbox.db")
	o, err := outbox.Open(t.Context(), dsn, outbox.WithLease(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	const lanes, perLane = 6, 2
	var keys []string
	for j := range perLane {
		for r := range lanes {
			m := cloudapi.Text(recipient(r), "x")
			m.IdempotencyKey = fmt.Sprintf("r%03d-m%d", r, j)
			if _, err := o.Enqueue(t.Context(), from, m); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, m.IdempotencyKey)
		}
	}
	heads := keys[:lanes]

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	readEnv := ""
	if read {
		readEnv = "1"
	}
	cmd.Env = append(os.Environ(), "OUTBOX_TEST_STUCK=1", "OUTBOX_TEST_DSN="+dsn, "OUTBOX_TEST_READ="+readEnv, "OUTBOX_TEST_DIR="+marks)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Wait until every lane's head is claimed (and, with read, its body
	// read), then kill.
	deadline := time.Now().Add(time.Minute)
	for {
		claimed := 0
		for _, k := range heads {
			it, err := o.Get(t.Context(), k)
			if err != nil {
				t.Fatal(err)
			}
			if it.State == outbox.StateSending {
				if _, err := os.Stat(filepath.Join(marks, k)); !read || err == nil {
					claimed++
				}
			}
		}
		if claimed == lanes {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the sender exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			t.Fatalf("%d of %d heads claimed after a minute", claimed, lanes)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited

	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithPairLimiter(pairlimit.New(fastPairs)))
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := startRun(t.Context(), o, c)
	if err := drainThenStop(t, o, done, cancel, time.Minute); err != nil {
		t.Fatalf("drain: %v", err)
	}
	checkDelivery(t, meta, len(keys), read)
	for _, k := range keys {
		it, err := o.Get(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		head := strings.HasSuffix(k, "-m0")
		want := outbox.StateAccepted
		if read && head {
			want = outbox.StateSubmittedUnknown
		}
		if it.State != want {
			t.Errorf("%s: %v (%s), want %v", k, it.State, it.Reason, want)
		}
		if head && !read {
			var states []string
			for _, h := range it.History {
				states = append(states, h.State.String())
			}
			if got := strings.Join(states, " "); got != "queued sending queued sending accepted" {
				t.Errorf("%s: history %s, want queued sending queued sending accepted", k, got)
			}
		}
	}
	for _, r := range meta.Requests() {
		if read && strings.HasSuffix(r.CallbackData, "-m0") {
			t.Errorf("%s sent again although its request may have reached Meta", r.CallbackData)
		}
	}
}

// heldTransport holds each request before reading its body until it
// takes a token from release, then hands it to inner and reports inner's
// error on finished.
type heldTransport struct {
	inner    http.RoundTripper
	arrived  chan struct{} // receives once per request held
	release  chan struct{} // one token per request let go
	finished chan error
}

func (h heldTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h.arrived <- struct{}{}
	select {
	case <-h.release:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	resp, err := h.inner.RoundTrip(r)
	h.finished <- err
	return resp, err
}

// A worker that is alive but lost its claim (its lease ended, as after a
// long pause, and another worker queued the item again and sent it) must
// not write its request when it resumes: its write mark finds the claim
// gone and the request is not written. The message reaches Meta once.
func TestWriteMarkClaimLost(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		claimLost(t, "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"))
	})
	t.Run("postgres", func(t *testing.T) { claimLost(t, requirePostgres(t)) })
}

func claimLost(t *testing.T, dsn string) {
	// Meta's pair rule at test speed: B seeds its pacing from A's claims
	// and would otherwise wait out 6.25 s of pair debt per claimed bubble
	// before sending (19 s for the burst).
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond))
	// One send in flight: A, paused in its held send, claims nothing
	// more. With more, A's Run could claim the items B's sweep queued
	// again, and its Client would refuse them locally as a duplicate of
	// the held send still in progress (safe, but not what this test is
	// about: A stands for a process paused whole).
	a := oneMarked(t, dsn, "lost-1")
	// Real sockets.
	held, ca := heldClient(t, meta, 1)
	ctxA, stopA := context.WithCancel(t.Context())
	doneA := make(chan error, 1)
	go func() { doneA <- a.Run(ctxA, ca) }()
	<-held.arrived // claimed by A, its request not written

	// A's lease ends (as if it had paused that long).
	if _, err := a.DB().ExecContext(t.Context(), `UPDATE outbox_items SET lease_until = 1 WHERE state = 'sending'`); err != nil {
		t.Fatal(err)
	}
	b, doneB, stopB := takeOver(t, dsn, meta, outbox.WithWriteMarks())
	deadline := time.Now().Add(30 * time.Second)
	for {
		it, err := b.Get(t.Context(), "lost-1")
		if err != nil {
			t.Fatal(err)
		}
		if it.State == outbox.StateAccepted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B did not send the item it took over: %v (%s)", it.State, it.Reason)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopB()
	<-doneB

	held.release <- struct{}{} // A resumes: its mark must find the claim gone
	if err := <-held.finished; err == nil || !strings.Contains(err.Error(), "claim was lost") {
		t.Errorf("A's request: %v, want the lost claim's error", err)
	}
	stopA()
	if err := <-doneA; err != context.Canceled {
		t.Errorf("A's Run: %v", err)
	}
	// (A's connection may carry the request's headers, never its body:
	// Meta cannot act on it.)
	carried := 0
	for _, r := range meta.Requests() {
		if r.CallbackData == "lost-1" || len(r.Body) > 0 {
			carried++
		}
	}
	if carried != 1 || meta.Accepted() != 1 {
		t.Errorf("Meta got the message %d times and accepted %d, want 1 and 1: %+v", carried, meta.Accepted(), meta.Requests())
	}
	it, err := a.Get(t.Context(), "lost-1")
	if err != nil {
		t.Fatal(err)
	}
	if it.State != outbox.StateAccepted {
		t.Errorf("state %v (%s), want accepted", it.State, it.Reason)
	}
	var states []string
	for _, h := range it.History {
		states = append(states, h.State.String())
	}
	if got, want := strings.Join(states, " "), "queued sending queued sending accepted"; got != want {
		t.Errorf("history %s, want %s", got, want)
	}
}

// A burst claimed by a worker that lost its claims before writing any
// bubble is queued again whole and sent once, in order, by the worker
// that took it over. If its first bubble was written (marked), the burst
// is not queued again: the bubbles after it stay submitted_unknown and
// are never sent (no hole in the reply), while the first, accepted by
// Meta, is recorded accepted when its worker learns it.
func TestWriteMarkBurstRecovery(t *testing.T) {
	for _, written := range []int{0, 1} {
		t.Run(fmt.Sprintf("sqlite/written=%d", written), func(t *testing.T) {
			burstRecovery(t, "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"), written)
		})
		t.Run(fmt.Sprintf("postgres/written=%d", written), func(t *testing.T) { burstRecovery(t, requirePostgres(t), written) })
	}
}

func burstRecovery(t *testing.T, dsn string, written int) {
	// Meta's pair rule at test speed: B seeds its pacing from A's claims
	// and would otherwise wait out 6.25 s of pair debt per claimed bubble
	// before sending (19 s for the burst).
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond))
	// One send in flight: A, paused in its held send, claims nothing
	// more. With more, A's Run could claim the items B's sweep queued
	// again, and its Client would refuse them locally as a duplicate of
	// the held send still in progress (safe, but not what this test is
	// about: A stands for a process paused whole).
	a, err := outbox.Open(t.Context(), dsn, outbox.WithWriteMarks(), outbox.WithLease(time.Minute), outbox.WithConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	keys := []string{"b-0", "b-1", "b-2"}
	var msgs []cloudapi.Message
	for _, k := range keys {
		m := cloudapi.Text(recipient(1), k)
		m.IdempotencyKey = k
		msgs = append(msgs, m)
	}
	if _, err := a.EnqueueBurst(t.Context(), from, msgs...); err != nil {
		t.Fatal(err)
	}
	held, ca := heldClient(t, meta, 3)
	ctxA, stopA := context.WithCancel(t.Context())
	doneA := make(chan error, 1)
	go func() { doneA <- a.Run(ctxA, ca) }()
	<-held.arrived
	for range written {
		held.release <- struct{}{}
		if err := <-held.finished; err != nil {
			t.Fatal(err)
		}
		<-held.arrived // the next bubble, held before its write
	}
	// A's leases end (as if it had paused that long); B takes over.
	if _, err := a.DB().ExecContext(t.Context(), `UPDATE outbox_items SET lease_until = 1 WHERE state = 'sending'`); err != nil {
		t.Fatal(err)
	}
	b, doneB, stopB := takeOver(t, dsn, meta)
	settled := func() bool {
		for _, k := range keys[written:] {
			it, err := b.Get(t.Context(), k)
			if err != nil {
				t.Fatal(err)
			}
			if !it.State.Final() {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(30 * time.Second)
	for !settled() {
		if time.Now().After(deadline) {
			t.Fatal("B did not settle the burst")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopB()
	<-doneB
	held.release <- struct{}{} // A resumes: its mark must find its claim gone
	if err := <-held.finished; err == nil {
		t.Error("A wrote a bubble after losing its claim")
	}
	// A's send ends and records what it can.
	deadline = time.Now().Add(30 * time.Second)
	for {
		it, err := a.Get(t.Context(), keys[0])
		if err != nil {
			t.Fatal(err)
		}
		if it.State == outbox.StateAccepted || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopA()
	<-doneA

	sent := map[string]int{}
	for _, r := range meta.Requests() {
		if r.Accepted {
			sent[r.CallbackData]++
		}
	}
	for i, k := range keys {
		it, err := a.Get(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		wantState, wantSent := outbox.StateAccepted, 1
		if written > 0 && i >= written {
			wantState, wantSent = outbox.StateSubmittedUnknown, 0
		}
		if it.State != wantState || sent[k] != wantSent {
			t.Errorf("%s: %v (%s), accepted by Meta %d times; want %v, %d", k, it.State, it.Reason, sent[k], wantState, wantSent)
		}
	}
	if written == 0 {
		var order []string
		for _, r := range meta.Requests() {
			if r.Accepted {
				order = append(order, r.CallbackData)
			}
		}
		if got := strings.Join(order, " "); got != "b-0 b-1 b-2" {
			t.Errorf("Meta accepted %s, want b-0 b-1 b-2", got)
		}
	}
}

// heldClient returns a Client on real sockets to meta whose requests are
// held before their body is read (see heldTransport), up to sends of them
// released at once.
func heldClient(t *testing.T, meta *cloudapitest.Server, sends int, opts ...cloudapi.Option) (heldTransport, *cloudapi.Client) {
	t.Helper()
	inner := &http.Transport{}
	t.Cleanup(inner.CloseIdleConnections)
	held := heldTransport{inner: inner, arrived: make(chan struct{}, 1), release: make(chan struct{}, sends), finished: make(chan error, sends)}
	opts = append([]cloudapi.Option{cloudapi.WithBaseURL(meta.URL()), cloudapi.WithHTTPClient(&http.Client{Transport: held})}, opts...)
	c, err := cloudapi.New("TOKEN", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return held, c
}

// takeOver opens the outbox at dsn as a second worker B (with opts) and
// starts its Run with a Client of the test-speed pair rule against meta;
// B is closed when the test ends.
func takeOver(t *testing.T, dsn string, meta *cloudapitest.Server, opts ...outbox.Option) (*outbox.Outbox, <-chan error, context.CancelFunc) {
	t.Helper()
	b, err := outbox.Open(t.Context(), dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cb, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithPairLimiter(pairlimit.New(fastPairs)))
	if err != nil {
		t.Fatal(err)
	}
	done, stop := startRun(t.Context(), b, cb)
	return b, done, stop
}

// oneMarked opens the outbox at dsn with write marks, a minute's lease
// and one send in flight, holding one text keyed key; it is closed when
// the test ends (opts add to, or override, these).
func oneMarked(t *testing.T, dsn, key string, opts ...outbox.Option) *outbox.Outbox {
	t.Helper()
	opts = append([]outbox.Option{outbox.WithWriteMarks(), outbox.WithLease(time.Minute), outbox.WithConcurrency(1)}, opts...)
	o, err := outbox.Open(t.Context(), dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	m := cloudapi.Text(recipient(1), "x")
	m.IdempotencyKey = key
	if _, err := o.Enqueue(t.Context(), from, m); err != nil {
		t.Fatal(err)
	}
	return o
}
