package cloudapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/writemark"
	"github.com/wapace/wapace/internal/writewindow"
	"github.com/wapace/wapace/throughput"
)

// stallOnce holds every request made in [from, from+d) until from+d, on
// the bubble's clock: a sender process not scheduled for d.
type stallOnce struct {
	inner    http.RoundTripper
	from, to time.Time
	n        atomic.Int64
}

func (s *stallOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	s.n.Add(1)
	if now := time.Now(); !now.Before(s.from) && now.Before(s.to) {
		time.Sleep(s.to.Sub(now))
	}
	return s.inner.RoundTrip(r)
}

// bunchRun sends n texts from one number at mps, all queued at once, on
// simulated time, through the in-memory fake (which reports the write to
// httptrace); the transport stalls for stall from 2 s. It returns, per
// second after the stall, the largest number of writes at one instant,
// and the requests made.
func bunchRun(t *testing.T, mps, n int, stall time.Duration) (per []int, made int64, refused int, most int) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t, cloudapitest.WithNumberThroughput(number, mps), cloudapitest.WithHistory(n+10))
		start := time.Now()
		tr := &stallOnce{inner: srv.Client().Transport, from: start.Add(2 * time.Second), to: start.Add(2*time.Second + stall)}
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(&http.Client{Transport: tr}), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Number(number).SetMPSAt(start, mps); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var failed atomic.Int64
		for i := range n {
			wg.Go(func() {
				if _, err := c.Send(t.Context(), number, cloudapi.Text(fmt.Sprintf("+2376930%06d", i), "hi")); err != nil {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		if f := failed.Load(); f != 0 {
			t.Errorf("%d sends failed", f)
		}
		at := wholeAt(srv)
		most, _ = mostInAClosedSecond(at, time.Time{})
		same := map[time.Time]int{}
		for _, a := range at {
			same[a]++
		}
		end := tr.to
		for a := range same {
			if a.After(end) {
				end = a
			}
		}
		per = make([]int, int(end.Sub(tr.to)/time.Second)+1)
		for a, k := range same {
			if !a.Before(tr.to) {
				i := int(a.Sub(tr.to) / time.Second)
				per[i] = max(per[i], k)
			}
		}
		made, refused = tr.n.Load(), srv.Count(errcodes.ThroughputLimit)
	})
	return per, made, refused, most
}

// Review 9, measurement: how long the bunch after a stall comes back,
// each second, at 80 and at 1,000 msg/s (window.go says it shrinks by the
// 1 % of the figure the bucket leaves free each second). Logged, not
// asserted; fails only on a refusal or more than the figure in a second.
func TestReview9BunchAfterAStall(t *testing.T) {
	for _, tc := range []struct {
		mps, n int
		stall  time.Duration
	}{
		{80, 80 * 40, 500 * time.Millisecond},
		{1000, 1000 * 25, 200 * time.Millisecond},
	} {
		t.Run(fmt.Sprint(tc.mps), func(t *testing.T) {
			per, made, refused, most := bunchRun(t, tc.mps, tc.n, tc.stall)
			last := -1
			for i, k := range per {
				if k > max(2, tc.mps/100) {
					last = i
				}
			}
			t.Logf("%d msg/s, %d sends, stall %v: %d requests made; most in a closed second %d; largest same-instant group per second after the stall: %v; last second with a bunch over %d: %d",
				tc.mps, tc.n, tc.stall, made, most, per, max(2, tc.mps/100), last)
			if refused != 0 || most > tc.mps {
				t.Errorf("%d x 130429, %d in a closed second", refused, most)
			}
		})
	}
}

// markRun sends n texts from one number at mps, all queued at once, on
// simulated time, each with a write mark (internal/writemark, as the
// outbox's WithWriteMarks gives) that takes mark; tr wraps the in-memory
// transport when not nil. It returns the rate between the first and the
// last arrival as a share of mps, the requests made, the refusals and
// the most arrivals in a closed second.
func markRun(t *testing.T, mps, n int, mark time.Duration, wrap func(http.RoundTripper) http.RoundTripper) (share float64, made int64, refused, most int) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t, cloudapitest.WithNumberThroughput(number, mps), cloudapitest.WithHistory(n+10))
		start := time.Now()
		cnt := &countRT{inner: srv.Client().Transport}
		var tr http.RoundTripper = cnt
		if wrap != nil {
			tr = wrap(cnt)
		}
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(&http.Client{Transport: tr}), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Number(number).SetMPSAt(start, mps); err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if mark > 0 {
			ctx = writemark.With(ctx, func(context.Context, string) error {
				time.Sleep(mark)
				return nil
			})
		}
		var wg sync.WaitGroup
		var failed atomic.Int64
		for i := range n {
			wg.Go(func() {
				if _, err := c.Send(ctx, number, cloudapi.Text(fmt.Sprintf("+2376940%06d", i), "hi")); err != nil {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		if f := failed.Load(); f != 0 {
			t.Errorf("%d sends failed", f)
		}
		at := wholeAt(srv)
		most, _ = mostInAClosedSecond(at, time.Time{})
		share = float64(len(at)-1) / at[len(at)-1].Sub(at[0]).Seconds() / float64(mps)
		made, refused = cnt.n.Load(), srv.Count(errcodes.ThroughputLimit)
	})
	return share, made, refused, most
}

// countRT counts the requests made.
type countRT struct {
	inner http.RoundTripper
	n     atomic.Int64
}

func (c *countRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.inner.RoundTrip(r)
}

// Review 9, finding 2: the window binds in steady state when the time
// from a write's leave (the check's first pass) to the transport's report
// of it is more than about 5 ms at 1,000 msg/s (7.6 ms at 80): the bucket
// lets 99 % of the figure a second, and the window counts every write
// from its leave until a second and 5 ms after its report, so it holds
// rate x (1.005 s + d) writes, over the figure once d > 5 ms. The outbox's
// write mark (WithWriteMarks: a durable commit, shared by the sends in
// flight) runs between the first check, which takes the leave, and the
// write (cloudapi/writemark.go, ready): a 20 ms mark costs the number
// 1 - 1/1.025 of its figure, and every send then waits for the window.
// The same happens with a transport that never reports WroteRequest, the
// leave then lasting until the request ends (see the next test).
//
// At fault: gate.check takes the ticket on ready's first check and the
// second keeps it (if g.ticket == nil); the mark should run before the
// leave is taken (or the leave be given back for the mark and taken again).
// Not a regression: at 3253677 the same runs gave 95.7 % (20 ms) and
// 90.4 % (50 ms), every send re-slotted once. Dropping the ticket before
// the mark in ready (an experiment, not committed) gave 99.1 % at both.
func TestReview9WriteMarkMakesTheWindowBind(t *testing.T) {
	for _, tc := range []struct {
		mps, n int
		mark   time.Duration
	}{
		{1000, 10000, 0},
		{1000, 10000, 20 * time.Millisecond},
		{1000, 10000, 50 * time.Millisecond},
		{80, 800, 0},
		{80, 800, 50 * time.Millisecond},
	} {
		t.Run(fmt.Sprint(tc.mps, "/", tc.mark), func(t *testing.T) {
			share, made, refused, most := markRun(t, tc.mps, tc.n, tc.mark, nil)
			t.Logf("%d msg/s, mark %v: %.4f of the figure, %d requests for %d sends, most in a closed second %d, %d x 130429", tc.mps, tc.mark, share, made, tc.n, most, refused)
			if share < 0.985 {
				t.Errorf("%d msg/s with a write mark of %v: %.1f %% of the figure, want 98.5 %% at least (the bucket's 99 %%)", tc.mps, tc.mark, 100*share)
			}
		})
	}
}

// untraced sends r on a context of its own, which keeps r's cancellation
// but none of its values (so none of its httptrace hooks), as some
// wrappers do; its answer then comes after latency (Meta's round trip).
type untraced struct {
	inner   http.RoundTripper
	latency time.Duration
}

func (u untraced) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(r.Context(), cancel)
	defer stop()
	res, err := u.inner.RoundTrip(r.WithContext(ctx))
	time.Sleep(u.latency)
	return res, err
}

// Review 9, finding 3: with a transport that never reports WroteRequest
// (a RoundTripper of the user's that re-issues the request on a context
// of its own, or one that is not net/http's), the window counts each
// write from its leave until a second and 5 ms after its request ends:
// a number then sends at most its figure / (1.005 s + the round trip),
// 77 % of it when Meta answers in 300 ms. The tolerance it replaced cost
// such transports nothing. pace.go says the end of the request stands in
// for the report ("or, failing one, the end of the request"), not what
// it costs.
//
// At 3253677 the same run gave 98.75 % in 800 requests (here 78 %, and
// about 1,550 requests: nearly every send's first request ends in the
// check to wait outside, a connection each on HTTP/1). Kept as the
// documented cost (WithHTTPClient): safe, and slow.
func TestReview9NoWroteRequestCostsTheRoundTrip(t *testing.T) {
	for _, lat := range []time.Duration{0, 300 * time.Millisecond} {
		t.Run(fmt.Sprint(lat), func(t *testing.T) {
			share, made, refused, most := markRun(t, 80, 800, 0, func(rt http.RoundTripper) http.RoundTripper { return untraced{rt, lat} })
			t.Logf("80 msg/s, no WroteRequest, round trip %v: %.4f of the figure, %d requests for 800, most in a closed second %d, %d x 130429", lat, share, made, most, refused)
			// The cost WithHTTPClient documents: figure / (1.005 s +
			// the round trip), less the bucket's 1 %.
			want := 0.985 / (1.005 + lat.Seconds())
			if share < want-0.02 || refused != 0 || most > 80 {
				t.Errorf("80 msg/s with a transport that does not report its writes and a round trip of %v: %.1f %% of the figure (want %.1f %% at least), %d x 130429, most in a second %d", lat, 100*share, 100*(want-0.02), refused, most)
			}
		})
	}
}

// Review 9, finding 1 through the Client (see throughput's
// TestReview9CutThenRaiseForgetsWrites): at 80 msg/s, on simulated time,
// a stall of 500 ms at 2 s bunches the sends due in it; at 3.2 s, while
// the sends after the bunch wait for the window, the number's figure is
// cut to 40 and raised back to 80 10 ms later (a figure set by mistake
// and corrected; the fake's stays 80). The window forgot the writes that
// did not fit 40, and lets that many more go within the second: 81
// arrivals in the closed second from 2.5 s and one 130429 (the stall
// alone, or the cut and raise alone: 80; at 3253677, all three: 80).
func TestReview9CutThenRaiseThroughTheClient(t *testing.T) {
	for _, tc := range []struct {
		name       string
		stall, cut bool
	}{
		{"stall, cut and raise", true, true},
		{"stall only", true, false},
		{"cut and raise only", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			most, from, refused := cutRaiseRun(t, tc.stall, tc.cut)
			t.Logf("%s: %d x 130429; at most %d arrivals in a closed second (from %v)", tc.name, refused, most, from)
			if refused != 0 || most > 80 {
				t.Errorf("%d x 130429; %d arrivals in the closed second from %v (the figure 80, cut to 40 for 10 ms at 3.2 s: %v)", refused, most, from, tc.cut)
			}
		})
	}
}

// cutRaiseRun is one run of TestReview9CutThenRaiseThroughTheClient: it
// returns the most arrivals in a closed second, when it starts (from the
// run's start), and the refusals.
func cutRaiseRun(t *testing.T, stall, cut bool) (most int, from time.Duration, refused int) {
	synctest.Test(t, func(t *testing.T) {
		const n = 80 * 8
		srv := cloudapitest.NewServer(t, cloudapitest.WithHistory(n+10))
		start := time.Now()
		var tr http.RoundTripper = srv.Client().Transport
		if stall {
			tr = &stallOnce{inner: tr, from: start.Add(2 * time.Second), to: start.Add(2500 * time.Millisecond)}
		}
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(&http.Client{Transport: tr}), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		if cut {
			go func() {
				time.Sleep(3200 * time.Millisecond)
				if err := c.Number(number).SetMPSAt(time.Now(), 40); err != nil {
					t.Error(err)
				}
				time.Sleep(10 * time.Millisecond)
				if err := c.Number(number).SetMPSAt(time.Now(), 80); err != nil {
					t.Error(err)
				}
			}()
		}
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, _ = c.Send(t.Context(), number, cloudapi.Text(fmt.Sprintf("+2376950%06d", i), "hi"))
			})
		}
		wg.Wait()
		m, f := mostInAClosedSecond(wholeAt(srv), time.Time{})
		most, from, refused = m, f.Sub(start), srv.Count(errcodes.ThroughputLimit)
	})
	return most, from, refused
}

// Review 9, held: HTTP/2 over TLS on real sockets (the fake's handler
// behind an httptest TLS server with HTTP/2), 80 msg/s, 400 sends, the
// transport stalled 300 ms at 1 s and again at 3 s: the bunches meet the
// window, and sends that wait for it outside the request end their
// stream, not their connection. Checked: every send accepted once, no
// 130429, no closed second at the fake over 80 (the fake stamps in its
// handler: run it on a quiet machine).
func TestReview9HTTP2Bunches(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets, 5 s")
	}
	srv := cloudapitest.NewServer(t, cloudapitest.WithHistory(1000))
	ts := httptest.NewUnstartedServer(srv)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	hc := ts.Client()
	start := time.Now()
	var tr http.RoundTripper = &wallStall{inner: hc.Transport, at: []time.Time{start.Add(time.Second), start.Add(3 * time.Second)}, d: 300 * time.Millisecond}
	var h2 atomic.Int64
	c, err := cloudapi.New(secretToken, cloudapi.WithBaseURL(ts.URL), cloudapi.WithHTTPClient(&http.Client{Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
		res, err := tr.RoundTrip(r)
		if err == nil && res.ProtoMajor == 2 {
			h2.Add(1)
		}
		return res, err
	})}))
	if err != nil {
		t.Fatal(err)
	}
	const n = 400
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range n {
		wg.Go(func() {
			if _, err := c.Send(t.Context(), number, cloudapi.Text(fmt.Sprintf("+2376960%06d", i), "hi")); err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	got := received(srv)
	most, from := mostInAClosedSecond(wholeAt(srv), time.Time{})
	t.Logf("%d answers over HTTP/2; %d recipients received; most in a closed second %d (from %v); %d failed", h2.Load(), len(got), most, from.Sub(start), failed.Load())
	if h2.Load() == 0 {
		t.Fatal("no answer over HTTP/2")
	}
	if f := failed.Load(); f != 0 {
		t.Errorf("%d sends failed", f)
	}
	for to, k := range got {
		if k != 1 {
			t.Errorf("%s received %d times", to, k)
		}
	}
	if refused := srv.Count(errcodes.ThroughputLimit); refused != 0 || most > 80 {
		t.Errorf("%d x 130429, %d in a closed second", refused, most)
	}
}

// wallStall holds every request made in [a, a+d) for an a in at until
// a+d, on the real clock.
type wallStall struct {
	inner http.RoundTripper
	at    []time.Time
	d     time.Duration
}

func (s *wallStall) RoundTrip(r *http.Request) (*http.Response, error) {
	now := time.Now()
	for _, a := range s.at {
		if !now.Before(a) && now.Before(a.Add(s.d)) {
			time.Sleep(a.Add(s.d).Sub(now))
		}
	}
	return s.inner.RoundTrip(r)
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// probeWindow asks the number's window of writes for up to limit leaves
// at now, dropping each, and returns how many it gave at once: limit
// when no leave is held and no write counted in the last second.
func probeWindow(l *throughput.Limiter, now time.Time) int {
	let := writewindow.Let.(func(*throughput.Limiter, time.Time) (writewindow.Ticket, time.Duration))
	var ks []writewindow.Ticket
	defer func() {
		for _, k := range ks {
			k.Drop()
		}
	}()
	for range l.PerSecond() {
		k, _ := let(l, now)
		if k == nil {
			break
		}
		ks = append(ks, k)
	}
	return len(ks)
}

// Review 9, liveness: every path through the check gives its leave back
// or reports it. On simulated time, at 80 msg/s, a stall bunches the sends
// so that the window is full and sends wait for it, inside and outside
// their requests, while: a quarter of them are cancelled, a quarter carry
// a deadline that the wait passes, a tenth have a write mark that fails,
// a tenth a fence that refuses; a tenth go through a transport that reads
// the body and fails without a write, a tenth one that asks GetBody again
// after reading the body. Two seconds after the last send ended, the
// window must give all 80 leaves at once (a leave never given back would
// hold its room for ever).
func TestReview9EveryPathGivesItsLeaveBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 400
		srv := cloudapitest.NewServer(t, cloudapitest.WithHistory(n+10))
		start := time.Now()
		stall := &stallOnce{inner: misbehave{srv.Client().Transport}, from: start.Add(time.Second), to: start.Add(1600 * time.Millisecond)}
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(&http.Client{Transport: stall}), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		states := map[cloudapi.SendState]int{}
		sample := map[cloudapi.SendState]string{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				ctx := t.Context()
				m := cloudapi.Text(fmt.Sprintf("+2376970%05d%d", i, i%10), "hi")
				switch {
				case i%4 == 1:
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Duration(1000+i*5)*time.Millisecond)
					defer cancel()
				case i%4 == 2:
					m.ExpiresAt = start.Add(time.Duration(1000+i*5) * time.Millisecond)
				}
				switch i % 10 {
				case 4:
					ctx = writemark.With(ctx, func(context.Context, string) error { return errors.New("mark refused") })
				case 5:
					ctx = writemark.WithFence(ctx, func(string) error { return errors.New("fence refused") })
				case 6:
					ctx = writemark.With(ctx, func(context.Context, string) error {
						time.Sleep(30 * time.Millisecond)
						return nil
					})
				}
				_, err := c.Send(ctx, number, m)
				mu.Lock()
				states[cloudapi.StateOf(err)]++
				if err != nil && sample[cloudapi.StateOf(err)] == "" {
					sample[cloudapi.StateOf(err)] = err.Error()
				}
				mu.Unlock()
			})
		}
		wg.Wait()
		time.Sleep(2 * time.Second)
		got := probeWindow(c.Number(number), time.Now())
		t.Logf("%d requests; states %v (e.g. %q); %d x 130429; the window gives %d of 80 leaves at once", stall.n.Load(), states, sample, srv.Count(errcodes.ThroughputLimit), got)
		if got != 80 {
			t.Errorf("2 s after the last send, the window gives %d leaves at once, want 80: %d leaves never given back", got, 80-got)
		}
	})
}

// misbehave reads each request's body first (the write-time check runs
// then, and the window's leave is taken), and by the recipient's last
// digit: 1 fails without writing anything; 2 asks GetBody for another
// body (refused: errResend); the others go through with the bytes read.
type misbehave struct{ inner http.RoundTripper }

func (m misbehave) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil {
		return m.inner.RoundTrip(r)
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	digit := byte(0)
	if i := bytes.Index(b, []byte(`"to":"`)); i >= 0 {
		if j := bytes.IndexByte(b[i+6:], '"'); j > 0 {
			digit = b[i+6+j-1]
		}
	}
	switch digit {
	case '1': // read, then fail: nothing written
		return nil, errors.New("review9: transport failed after reading the body")
	case '2': // read, then read again
		if _, err := r.GetBody(); err != nil {
			return nil, err
		}
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(b))
	r2.GetBody = nil
	return m.inner.RoundTrip(r2)
}

// Review 9, held: a send that waits for the window outside its request
// (errWaitOutside) goes again in a new request of the same attempt, its
// write mark made once. On simulated time, 80 msg/s, 640 sends with a
// write mark that counts its calls by key, a stall of 500 ms at 2 s:
// some requests end in the check (more requests than sends); every send
// accepted in one attempt, marked once, received once.
func TestReview9WaitOutsideMarksOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 640
		srv := cloudapitest.NewServer(t, cloudapitest.WithHistory(n+10))
		start := time.Now()
		tr := &stallOnce{inner: srv.Client().Transport, from: start.Add(2 * time.Second), to: start.Add(2500 * time.Millisecond)}
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(&http.Client{Transport: tr}), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		marks := map[string]int{}
		ctx := writemark.With(t.Context(), func(_ context.Context, key string) error {
			mu.Lock()
			marks[key]++
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			return nil
		})
		res := make([]*cloudapi.Result, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res[i], errs[i] = c.Send(ctx, number, cloudapi.Text(fmt.Sprintf("+2376980%06d", i), "hi"))
			})
		}
		wg.Wait()
		if made := tr.n.Load(); made <= n {
			t.Fatalf("%d requests for %d sends: no request ended in the check (the scenario did not happen)", made, n)
		} else {
			t.Logf("%d requests for %d sends", made, n)
		}
		for i, err := range errs {
			if err != nil {
				t.Errorf("send %d: %v", i, err)
			} else if res[i].Attempts != 1 {
				t.Errorf("send %d: %d attempts", i, res[i].Attempts)
			}
		}
		for key, k := range marks {
			if k != 1 {
				t.Errorf("key %s marked %d times", key, k)
			}
		}
		if len(marks) != n {
			t.Errorf("%d keys marked, want %d", len(marks), n)
		}
		for to, k := range received(srv) {
			if k != 1 {
				t.Errorf("%s received %d times", to, k)
			}
		}
	})
}
