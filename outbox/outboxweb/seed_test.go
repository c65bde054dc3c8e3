package outboxweb_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/outbox/outboxweb"
	"github.com/wapace/wapace/pairlimit"
)

const (
	number  = "106540352242922"
	alice   = "+237690000001"
	bob     = "+237690000002"
	token   = "console-test-token-5f2a9c"
	burstOf = 5
)

// fakeRule is the fake's pair rule: short enough for a real-time seed,
// with a burst window wide enough for five sends under -race on a loaded
// machine.
var fakeRule = pairlimit.Policy{Interval: 4 * time.Second, Burst: 45, BurstWindow: 1500 * time.Millisecond}

// seeded is an outbox with a burst to alice and the 131056 it caused, a
// dead letter to bob, and a queued item.
type seeded struct {
	o   *outbox.Outbox
	srv *httptest.Server
}

// seed runs an outbox against the fake with a pair limiter far too loose
// (one message per millisecond) and one attempt per dispatch, so that
// Meta's refusal shows: five messages to alice go as a burst, the sixth,
// 1.7 s later (past the burst window, while the pair owes 20 s), is
// refused with 131056; bob's message fails for good (131049).
func seed(t *testing.T) *seeded {
	t.Helper()
	ctx := t.Context()
	// The fake judges on its own clock, frozen during the burst (so that
	// a slow machine cannot split it) and set to the real time for the
	// victim.
	fakeClock := clock.NewMock()
	fakeClock.Set(time.Now())
	meta := cloudapitest.NewServer(t, cloudapitest.WithClock(fakeClock),
		cloudapitest.WithPairRule(fakeRule.Interval, fakeRule.Burst, fakeRule.BurstWindow))
	loose := pairlimit.New(pairlimit.Policy{Interval: time.Millisecond, Burst: 45, BurstWindow: 6 * time.Second}, pairlimit.WithMargin(0))
	c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL),
		cloudapi.WithPairLimiter(loose), cloudapi.WithRetry(backoff.Meta, 1))
	if err != nil {
		t.Fatal(err)
	}
	o, err := outbox.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "console.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	enqueue := func(key, to string) {
		t.Helper()
		m := cloudapi.Text(to, "hello")
		m.IdempotencyKey = key
		if _, err := o.Enqueue(ctx, number, m); err != nil {
			t.Fatal(err)
		}
	}
	for i := range burstOf {
		enqueue("menu-"+string(rune('1'+i)), alice)
	}
	meta.FailNextFor(bob, errcodes.Code(131049))
	enqueue("dead-1", bob)
	runUntil(t, o, c, func() bool { return final(o, "menu-5") && final(o, "dead-1") })
	if n := meta.Count(errcodes.PairRateLimit); n != 0 {
		t.Fatalf("the seed's burst was split (%d 131056): the machine is too slow for its %v window", n, fakeRule.BurstWindow)
	}
	start := time.Now()
	if it, err := o.Get(ctx, "menu-1"); err == nil && len(it.History) > 1 {
		start = it.History[1].At // its dispatch, on the outbox's (real) clock
	}
	time.Sleep(time.Until(start.Add(fakeRule.BurstWindow + 200*time.Millisecond)))
	fakeClock.Set(time.Now())
	enqueue("victim", alice)
	runUntil(t, o, c, func() bool {
		it, err := o.Get(ctx, "victim")
		return err == nil && len(it.History) >= 3 // queued, sending, queued again after the refusal
	})
	if n := meta.Count(errcodes.PairRateLimit); n != 1 {
		t.Fatalf("the seed met %d 131056, want 1", n)
	}
	enqueue("later", "+237690000003")
	return &seeded{o: o}
}

func final(o *outbox.Outbox, key string) bool {
	it, err := o.Get(context.Background(), key)
	return err == nil && it.State.Final()
}

// runUntil runs o until cond holds (polled), at most 30 s.
func runUntil(t *testing.T, o *outbox.Outbox, c *cloudapi.Client, cond func() bool) {
	t.Helper()
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx, c) }()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			items, _ := o.List(context.Background(), outbox.Query{Limit: 20})
			var st []string
			for _, it := range items {
				st = append(st, fmt.Sprintf("%s=%v(%s)", it.Key, it.State, it.Reason))
			}
			t.Fatalf("seed: condition not met within 30 s; items: %s", strings.Join(st, "; "))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serve serves the console of s on a loopback port.
func (s *seeded) serve(t *testing.T, opts ...outboxweb.Option) string {
	t.Helper()
	opts = append([]outboxweb.Option{outboxweb.WithToken(token), outboxweb.WithPairPolicy(fakeRule)}, opts...)
	s.srv = httptest.NewServer(outboxweb.Handler(s.o, opts...))
	t.Cleanup(s.srv.Close)
	return s.srv.URL
}

// client is an HTTP client that keeps cookies and does not follow
// redirects.
func client() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
