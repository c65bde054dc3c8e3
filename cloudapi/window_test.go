package cloudapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
)

// stalled holds every request it is given before until (set at the
// first request: its instant plus stall) until then, as a process not
// scheduled for that long would: the sends due in the stall then reach
// the transport together, late.
type stalled struct {
	inner http.RoundTripper
	stall time.Duration
	once  sync.Once
	until atomic.Int64
	n     atomic.Int64 // requests made
}

func (s *stalled) RoundTrip(r *http.Request) (*http.Response, error) {
	s.n.Add(1)
	s.once.Do(func() { s.until.Store(time.Now().Add(s.stall).UnixNano()) })
	if d := time.Until(time.Unix(0, s.until.Load())); d > 0 {
		time.Sleep(d)
	}
	return s.inner.RoundTrip(r)
}

// windowRun sends n texts to n recipients from one number at its default
// 80 msg/s, concurrently, through a transport stalled for stall from the
// first request, with the request Timeout given; ctxOf gives send i's
// context. It returns the sends' errors, the server and the transport.
func windowRun(t *testing.T, n int, stall, timeout time.Duration, ctxOf func(int) context.Context) ([]error, *cloudapitest.Server, *stalled) {
	t.Helper()
	srv, tr, c := onSockets(t, func(inner http.RoundTripper) *stalled { return &stalled{inner: inner, stall: stall} }, timeout)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = c.Send(ctxOf(i), number, cloudapi.Text(fmt.Sprintf("+2376910%05d", i), "hi"))
		})
	}
	wg.Wait()
	return errs, srv, tr
}

// received counts, per recipient, the requests the server had whole.
func received(srv *cloudapitest.Server) map[string]int {
	got := map[string]int{}
	for _, r := range srv.Requests() {
		if r.To != "" {
			got[r.To]++
		}
	}
	return got
}

// wholeAt returns when the server had each whole request: a request
// ended in the check may reach it as headers without a body (no
// recipient), which is not a message.
func wholeAt(srv *cloudapitest.Server) []time.Time {
	var at []time.Time
	for _, r := range srv.Requests() {
		if r.To != "" {
			at = append(at, r.At)
		}
	}
	return at
}

// TestLateSendKeepsItsSlot: a send whose request reaches the transport
// 100 ms late (its goroutine, or the process, was not running) keeps its
// slot: a Client without a Store counts the number's writes themselves
// (throughput/window.go), so a late send goes at once while the last
// second of writes has room, instead of giving its slot back and taking
// one behind the queue (which left the slot unused: under load, 4 to 6 %
// of a number's figure). Real sockets, 80 sends at 80 msg/s, the first
// one late; a Timeout of 200 ms. Every send is accepted by its first
// request, in one attempt; the server never answers 130429, and no
// closed second at it holds more than 80.
func TestLateSendKeepsItsSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets, a second")
	}
	srv, tr, c := onSockets(t, late100, 200*time.Millisecond)
	res := make([]*cloudapi.Result, 80)
	errs := make([]error, 80)
	var wg sync.WaitGroup
	for i := range errs {
		if i == 1 {
			time.Sleep(5 * time.Millisecond) // the first takes the first slot
		}
		wg.Go(func() {
			res[i], errs[i] = c.Send(t.Context(), number, cloudapi.Text(fmt.Sprintf("+2376920%05d", i), "hi"))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("send %d: %v (%v)", i, err, cloudapi.StateOf(err))
		} else if res[i].Attempts != 1 {
			t.Errorf("send %d: %d attempts", i, res[i].Attempts)
		}
	}
	if made, got := tr.n.Load(), len(received(srv)); made != 80 || got != 80 {
		t.Errorf("%d requests made, %d recipients received: want 80 and 80 (the late send in its first request)", made, got)
	}
	at := wholeAt(srv)
	if most, from := mostInAClosedSecond(at, time.Time{}); most > throughput.Default {
		t.Errorf("%d arrivals in the closed second from %v", most, from)
	}
	if n := srv.Count(errcodes.ThroughputLimit); n != 0 {
		t.Errorf("%d x 130429", n)
	}
}

// TestWindowFullWaitsOutsideTheRequest: after a stall, the sends due in
// it go together, and the sends due a second later find the last second
// of writes full: each waits for its room, outside the request when that
// is further off than the check waits in one, and goes in a new request,
// accepted, in one attempt. Real sockets: 120 sends at 80 msg/s, the
// transport stalled 150 ms from the first request, a Timeout of 200 ms.
// Checked: some request was ended in the check (the scenario happened),
// every send accepted once and received once, no 130429, no closed second
// at the server with more than 80.
func TestWindowFullWaitsOutsideTheRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets, two seconds")
	}
	errs, srv, tr := windowRun(t, 120, 150*time.Millisecond, 200*time.Millisecond, func(int) context.Context { return t.Context() })
	got := received(srv)
	for i, err := range errs {
		if err != nil {
			t.Errorf("send %d: %v (%v)", i, err, cloudapi.StateOf(err))
		}
	}
	whole := 0
	for to, n := range got {
		whole += n
		if n > 1 {
			t.Errorf("%s received %d times", to, n)
		}
	}
	if made := tr.n.Load(); made <= int64(whole) {
		t.Errorf("%d requests made, %d received whole: no request was ended in the check, the scenario did not happen", made, whole)
	}
	at := wholeAt(srv)
	most, from := mostInAClosedSecond(at, time.Time{})
	if most > throughput.Default {
		t.Errorf("%d arrivals in the closed second from %v", most, from)
	}
	if n := srv.Count(errcodes.ThroughputLimit); n != 0 {
		t.Errorf("%d x 130429", n)
	}
	t.Logf("%d requests made, %d received whole; most in a closed second: %d", tr.n.Load(), whole, most)
}

// TestCancelWhileWaitingForTheWindowIsNotSubmitted: the sends waiting for
// the window's room (TestWindowFullWaitsOutsideTheRequest's scenario,
// without a request Timeout) are cancelled by their callers: each ends
// not submitted with the context's error, never unknown, and the server
// never receives it; the others are accepted. Every send's context ends
// 1.1 s in, when some 40 of the 120 sends at 80 msg/s still wait. (Only
// sends 70 to 119 had that context once, and in one run of eight they
// all had the first slots: none was waiting, and the test failed.)
func TestCancelWhileWaitingForTheWindowIsNotSubmitted(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets, two seconds")
	}
	late, cancel := context.WithCancel(t.Context())
	defer cancel()
	time.AfterFunc(1100*time.Millisecond, cancel)
	errs, srv, _ := windowRun(t, 120, 150*time.Millisecond, 0, func(int) context.Context { return late })
	got := received(srv)
	cancelled := 0
	for i, err := range errs {
		to := fmt.Sprintf("2376910%05d", i)
		switch st := cloudapi.StateOf(err); {
		case err == nil && got[to] == 1:
		case st == cloudapi.StateNotSubmitted && errors.Is(err, context.Canceled) && got[to] == 0:
			cancelled++
		default:
			t.Errorf("send %d: %v (%v); the server received it %d times", i, err, st, got[to])
		}
	}
	if cancelled == 0 {
		t.Error("no send was cancelled: the scenario did not happen")
	}
	t.Logf("%d cancelled, %d accepted", cancelled, len(got))
}

// TestLatePastItsDeadlineIsNotSent: a send that keeps its slot however
// late still never leaves after its message's deadline: its request
// reaches the transport 100 ms late, past an ExpiresAt 50 ms after the
// Send, and the check ends it before any byte of its body leaves, with a
// *BackpressureError (as a slot past the deadline does); the server never
// receives it.
func TestLatePastItsDeadlineIsNotSent(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets")
	}
	srv, _, c := onSockets(t, late100, 0)
	m := cloudapi.Text("+237693000001", "your code expires")
	m.ExpiresAt = time.Now().Add(50 * time.Millisecond)
	_, err := c.Send(t.Context(), number, m)
	var bp *cloudapi.BackpressureError
	if !errors.As(err, &bp) {
		t.Errorf("got %v (%v), want a *BackpressureError", err, cloudapi.StateOf(err))
	}
	if got := received(srv); len(got) != 0 {
		t.Errorf("the server received %v", got)
	}
}
