package cloudapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/internal/clocktest"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/throughput"
)

// Review 8's finding, un-tagged once fixed: a send found late by the
// write-time check waited for its new slot inside its HTTP request, and
// the *http.Client's Timeout ended it as submitted_unknown though its
// body never left. Long waits now happen outside the request (pace.go).

// onFirst runs first once, when it carries its first request, before
// the transport takes it, and counts the requests it carries: a sender
// descheduled between its slot and the write (a CPU hog, a GC: first
// sleeps), or a hold of the number that began after the send was
// admitted (first holds it), which the write-time check then meets.
type onFirst struct {
	inner http.RoundTripper
	first func()
	once  sync.Once
	n     atomic.Int64
}

func (o *onFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	o.n.Add(1)
	o.once.Do(o.first)
	return o.inner.RoundTrip(r)
}

// lateFirst is an onFirst whose first request is taken delay late.
func lateFirst(inner http.RoundTripper, delay time.Duration) *onFirst {
	return &onFirst{inner: inner, first: func() { time.Sleep(delay) }}
}

// onSockets starts a cloudapitest server on a real socket and a Client
// for it whose requests go through wrap's RoundTripper, in front of a
// transport of its own, with the request Timeout given (0: the
// Client's default) and opts.
func onSockets[T http.RoundTripper](t *testing.T, wrap func(http.RoundTripper) T, timeout time.Duration, opts ...cloudapi.Option) (*cloudapitest.Server, T, *cloudapi.Client) {
	t.Helper()
	srv := cloudapitest.NewServer(t)
	inner := &http.Transport{}
	t.Cleanup(inner.CloseIdleConnections)
	tr := wrap(inner)
	c, err := cloudapi.New(secretToken, append([]cloudapi.Option{cloudapi.WithBaseURL(srv.URL()),
		cloudapi.WithHTTPClient(&http.Client{Timeout: timeout, Transport: tr})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return srv, tr, c
}

// late100 is lateFirst with 100 ms, as onSockets takes it.
func late100(inner http.RoundTripper) *onFirst { return lateFirst(inner, 100*time.Millisecond) }

// TestReview8TimeoutInTheCheckIsNotSubmitted: review 8 found, on the wall clock
// (3,000 sends cut from 1,000 to 80 msg/s, beside a CPU hog), sends
// ending submitted_unknown that Meta never received. A send found late by
// the write-time check takes a new slot and waits for it inside the
// request, holding its connection; with a deep queue that slot is
// seconds away, and the *http.Client's Timeout (DefaultTimeout, 30 s, or
// the caller's) ended the request first. The Client then saw the
// transport's error after the headers were written and reported the
// outcome unknown, although the check never let a byte of the body go:
// the message was never sent, and a durable queue could only leave it
// unknown (never resent). It is not submitted.
//
// The same wait happened whenever the check met a hold (the upgrade's
// 131057); TestUpgradeRaisesTheRateOfQueuedSends and
// TestThroughputUpgradeWebhookRaisesTheRate passed only because
// cloudapitest's in-memory transport ignores the request's deadline.
// The fix moved long waits out of the request (pace.go: inRequestWait);
// a fix in check.go alone (refusing the body once the Timeout had run
// out) turned those waits into not_submitted failures.
//
// Here, on real sockets: 80 sends to 80 recipients at 80 msg/s (a
// second of queue), from a Client with a Store (whose limiters follow
// their tolerance: a Client without one lets a late send keep its slot,
// TestWindowFullWaitsOutsideTheRequest), the first one's request held
// 100 ms before the transport takes it (late by far more than the
// tolerance), a Timeout of 200 ms: its new slot is after the rest of the
// queue. Now the check ends
// that request before its body leaves (Meta receives nothing of it), the
// send waits for its new slot outside any request, and makes a new one,
// which Meta accepts. No send may end unknown unless Meta received it,
// nor not submitted if Meta did.
func TestReview8TimeoutInTheCheckIsNotSubmitted(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets, a second")
	}
	srv, tr, c := onSockets(t, late100, 200*time.Millisecond, cloudapi.WithStore(newSharedStore()))
	errs := make([]error, 80)
	var wg sync.WaitGroup
	for i := range errs {
		if i == 1 {
			time.Sleep(5 * time.Millisecond) // the first takes the first slot
		}
		wg.Go(func() {
			_, errs[i] = c.Send(t.Context(), number, cloudapi.Text(fmt.Sprintf("+2376900%05d", i), "hi"))
		})
	}
	wg.Wait()
	got := map[string]int{}
	for _, r := range srv.Requests() {
		got[r.To]++
	}
	unsent := 0
	for i, err := range errs {
		to := fmt.Sprintf("2376900%05d", i)
		switch st := cloudapi.StateOf(err); {
		case err == nil:
		case st == cloudapi.StateNotSubmitted && got[to] == 0:
			unsent++
		case st == cloudapi.StateSubmittedUnknown && got[to] == 0:
			t.Errorf("send %d: %v (%v), and Meta never received it", i, err, st)
		case st == cloudapi.StateNotSubmitted && got[to] > 0:
			t.Errorf("send %d: %v (%v), and Meta received it", i, err, st)
		default:
			t.Errorf("send %d: %v (%v); Meta received %d", i, err, st, got[to])
		}
		if err != nil && strings.Contains(err.Error(), secretToken) {
			t.Error("the token in an error")
		}
		var se *cloudapi.SendError
		if err != nil && !errors.As(err, &se) {
			t.Errorf("send %d: %T, not a *SendError", i, err)
		}
	}
	if errs[0] != nil {
		t.Errorf("the send found late: %v, want it accepted in a new request", errs[0])
	}
	// A request ended in the check may reach the server as headers
	// without a body (no recipient): it is not a message.
	whole := 0
	for to, n := range got {
		if to != "" {
			whole += n
		}
		if to != "" && n > 1 {
			t.Errorf("%s received %d times", to, n)
		}
	}
	if made := tr.n.Load(); made <= int64(whole) {
		t.Errorf("%d requests made, %d received whole: no request was ended in the check, the scenario did not happen", made, whole)
	}
	t.Logf("%d requests made, %d received whole, %d not submitted", tr.n.Load(), whole, unsent)
}

// TestReview8DeepQueueEndsUnknownUnsent: the timeout in the write check
// (TestReview8TimeoutInTheCheckIsNotSubmitted) without any cut or hold: a
// plain campaign of 3,000 concurrent Sends from one number at its default
// 80 msg/s (37 s of queue), over loopback HTTP, default options. A send
// that the check finds late re-slots at the end of the queue and waits
// there inside its request, past DefaultTimeout (30 s): it ends
// submitted_unknown, and Meta never received it. Measured at load 12 to
// 13 (other engineers' work): 152 of 3,000; with two nice -n 19 hog
// processes besides: 1,412 of 3,000. Each is a message a caller (or a
// queue) must treat as possibly sent, and that will never be delivered.
func TestReview8DeepQueueEndsUnknownUnsent(t *testing.T) {
	if testing.Short() {
		t.Skip("37 s of queue on the real clock")
	}
	srv := cloudapitest.NewServer(t)
	c, err := cloudapi.New(secretToken, cloudapi.WithBaseURL(srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	n := 3000
	errs := make([]error, n)
	start := time.Now()
	ends := make([]time.Duration, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = c.Send(t.Context(), number, cloudapi.Text("+23769"+fmt.Sprintf("%07d", i), "hi"))
			ends[i] = time.Since(start)
		})
	}
	wg.Wait()
	got := map[string]int{}
	for _, r := range srv.Requests() {
		got[r.To]++
	}
	states := map[cloudapi.SendState]int{}
	unknownUnsent, shown := 0, 0
	for i, err := range errs {
		st := cloudapi.StateOf(err)
		if err == nil {
			st = cloudapi.StateAccepted
		}
		states[st]++
		if st == cloudapi.StateSubmittedUnknown && got["23769"+fmt.Sprintf("%07d", i)] == 0 {
			unknownUnsent++
			if shown < 2 {
				shown++
				t.Logf("send %d ended at %v: %v", i, ends[i], err)
			}
		}
	}
	t.Logf("states %v; unknown never received: %d; took %v", states, unknownUnsent, time.Since(start))
	if unknownUnsent > 0 {
		t.Errorf("%d sends ended submitted_unknown, never received by Meta", unknownUnsent)
	}
}

// writeStamps is a transport that stamps, for each request Meta
// accepted, when its body started to go: the first read of the body
// that returned bytes, after every wait of the write-time check.
type writeStamps struct {
	inner http.RoundTripper
	mu    sync.Mutex
	at    []time.Time
}

type stampedBody struct {
	io.ReadCloser
	at *time.Time
}

func (b *stampedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && b.at.IsZero() {
		*b.at = time.Now()
	}
	return n, err
}

func (w *writeStamps) RoundTrip(r *http.Request) (*http.Response, error) {
	var at time.Time
	if r.Body != nil {
		r = r.Clone(r.Context())
		r.Body = &stampedBody{ReadCloser: r.Body, at: &at}
	}
	resp, err := w.inner.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusOK && !at.IsZero() {
		w.mu.Lock()
		w.at = append(w.at, at)
		w.mu.Unlock()
	}
	return resp, err
}

// mostInAClosedSecond is the most instants of at (sorted here) in one
// closed second starting at an instant not before from.
func mostInAClosedSecond(at []time.Time, from time.Time) (int, time.Time) {
	slices.SortFunc(at, time.Time.Compare)
	most, when := 0, time.Time{}
	for i, a := range at {
		if a.Before(from) {
			continue
		}
		j, _ := slices.BinarySearchFunc(at[i:], a.Add(time.Second), func(x, t time.Time) int {
			if x.After(t) {
				return 1
			}
			return -1
		})
		if j > most {
			most, when = j, a
		}
	}
	return most, when
}

// TestReview8CutOnTheWallClock: TestCutMovesQueuedSlotsLater on the
// real clock and real sockets (run it beside a CPU hog): 3,000 sends
// queued at 1,000 msg/s over loopback HTTP, cut to 80 after 1 s. Late
// wake-ups and late writes meet moved slots: no second that starts a
// second after the cut may hold more than 80 writes, none may be
// accepted twice, and none may fail. The writes are the Client's to
// space; the fake's own arrival instants are logged only: the fake runs
// in this process, and when the machine is loaded its handlers run late
// and bunch (once 81 in a second at load 9 to 13, the writes spaced), as
// Meta's, on machines of their own, do not. The realtime suite checks
// arrivals at a fake in a process of its own, which refuses with 130429. It fails today (load 7 to 16, two
// hog processes): the seconds after the cut held 80, but sends found late
// by the check re-slot behind the 80 msg/s queue, wait inside their
// request past DefaultTimeout, and end submitted_unknown although Meta
// never received them (TestReview8TimeoutInTheCheckIsNotSubmitted).
func TestReview8CutOnTheWallClock(t *testing.T) {
	if testing.Short() {
		t.Skip("25 s of queue on the real clock")
	}
	srv := cloudapitest.NewServer(t, cloudapitest.WithNumberThroughput(number, throughput.Upgraded))
	inner := &http.Transport{MaxIdleConnsPerHost: 1024}
	t.Cleanup(inner.CloseIdleConnections)
	stamps := &writeStamps{inner: inner}
	c, err := cloudapi.New(secretToken, cloudapi.WithBaseURL(srv.URL()), cloudapi.WithNumberThroughput(number, throughput.Upgraded),
		cloudapi.WithHTTPClient(&http.Client{Transport: stamps}))
	if err != nil {
		t.Fatal(err)
	}
	watch := clocktest.Watch(t)
	cutAt := make(chan time.Time, 1)
	go func() {
		time.Sleep(time.Second)
		now := time.Now()
		if err := c.Number(number).SetMPSAt(now, throughput.Default); err != nil {
			t.Error(err)
		}
		cutAt <- now
	}()
	var wg sync.WaitGroup
	for i := range 3000 {
		wg.Go(func() {
			if _, err := c.Send(t.Context(), number, cloudapi.Text("+23769"+fmt.Sprintf("%07d", i), "hi")); err != nil {
				t.Errorf("send %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	cut := <-cutAt
	seen := map[string]int{}
	for _, r := range srv.Requests() {
		if r.Accepted {
			seen[r.To]++
		}
	}
	for to, n := range seen {
		if n > 1 {
			t.Errorf("%s accepted %d times", to, n)
		}
	}
	arrived, aat := mostInASecond(srv, cut.Add(time.Second))
	most, at := mostInAClosedSecond(stamps.at, cut.Add(time.Second))
	stall, step := watch()
	t.Logf("%d accepted, %d requests; most in a second after the cut: %d written (from +%v), %d arrived (from +%v); the process stalled %v at most, the wall clock stepped %v",
		srv.Accepted(), len(srv.Requests()), most, at.Sub(cut), arrived, aat.Sub(cut), stall, step)
	if len(stamps.at) != srv.Accepted() {
		t.Errorf("%d writes stamped, %d accepted", len(stamps.at), srv.Accepted())
	}
	if most > throughput.Default {
		t.Errorf("%d writes in the second from +%v after the cut to 80 msg/s", most, at.Sub(cut))
	}
}

// TestCancelWhileWaitingOutsideIsNotSubmitted: the send found late
// (TestReview8TimeoutInTheCheckIsNotSubmitted's scenario, with a Store,
// without a request timeout) waits for its new slot, a second away, and its caller
// cancels it meanwhile: it ends not submitted, never unknown, and Meta
// never receives it.
func TestCancelWhileWaitingOutsideIsNotSubmitted(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets, a second")
	}
	srv, _, c := onSockets(t, late100, 0, cloudapi.WithStore(newSharedStore()))
	ctx0, cancel := context.WithCancel(t.Context())
	defer cancel()
	time.AfterFunc(400*time.Millisecond, cancel)
	errs := make([]error, 80)
	var wg sync.WaitGroup
	for i := range errs {
		if i == 1 {
			time.Sleep(5 * time.Millisecond) // the first takes the first slot
		}
		wg.Go(func() {
			ctx := t.Context()
			if i == 0 {
				ctx = ctx0
			}
			_, errs[i] = c.Send(ctx, number, cloudapi.Text(fmt.Sprintf("+2376900%05d", i), "hi"))
		})
	}
	wg.Wait()
	for _, r := range srv.Requests() {
		if r.To == "2376900"+"00000" {
			t.Errorf("Meta received the cancelled send")
		}
	}
	if st := cloudapi.StateOf(errs[0]); st != cloudapi.StateNotSubmitted || !errors.Is(errs[0], context.Canceled) {
		t.Errorf("the cancelled send: %v (%v), want not_submitted, context.Canceled", errs[0], st)
	}
}

// TestHoldMetInTheCheckWaitsOutsideTheRequest: a hold of 500 ms met by
// the write-time check, on real sockets, with a Timeout of 200 ms: the
// send waits it out outside the request and is accepted by its next
// one, in one attempt; it used to wait inside the request and end
// submitted_unknown on the Timeout, never sent.
func TestHoldMetInTheCheckWaitsOutsideTheRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets, half a second")
	}
	srv, tr, c := onSockets(t, func(inner http.RoundTripper) *onFirst { return &onFirst{inner: inner} }, 200*time.Millisecond)
	tr.first = func() { c.Number(number).Hold(time.Now(), 500*time.Millisecond, 500*time.Millisecond) }
	start := time.Now()
	res, err := c.Send(t.Context(), number, cloudapi.Text("+237690000001", "hi"))
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%v (%v)", err, cloudapi.StateOf(err))
	}
	if res.Attempts != 1 {
		t.Errorf("%d attempts, want 1: the wait outside is not a retry", res.Attempts)
	}
	if n := tr.n.Load(); n != 2 {
		t.Errorf("%d requests, want 2 (the one ended in the check, then the one sent)", n)
	}
	if took < 500*time.Millisecond {
		t.Errorf("sent after %v, within the hold of 500 ms", took)
	}
	if n := srv.Accepted(); n != 1 {
		t.Errorf("%d accepted, want 1", n)
	}
}
