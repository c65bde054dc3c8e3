package outbox_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

type traceKey struct{}

// fakeTracer stores ctx's trace value and records the dispatches.
type fakeTracer struct {
	mu   sync.Mutex
	seen map[string]string // key -> stored trace context at dispatch
	ends int
}

func (f *fakeTracer) Inject(ctx context.Context) string {
	s, _ := ctx.Value(traceKey{}).(string)
	return s
}

func (f *fakeTracer) Dispatch(ctx context.Context, it outbox.Item, stored string) (context.Context, func(error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen[it.Key] = stored
	return ctx, func(error) { f.mu.Lock(); f.ends++; f.mu.Unlock() }
}

func TestTracerCarriesEnqueueContextToDispatch(t *testing.T) {
	h := newTraceHarness(t)
	ft := &fakeTracer{seen: map[string]string{}}
	path := filepath.Join(t.TempDir(), "o.db")
	ctx := t.Context()
	o, err := outbox.Open(ctx, "sqlite:"+path, outbox.WithTracer(ft))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	long := make([]byte, 2000)
	for i := range long {
		long[i] = 'x'
	}
	for _, c := range []struct{ key, to, tc string }{
		{"a", "+237690000001", "00-trace-a"},
		{"b", "+237690000002", ""},
		{"c", "+237690000003", string(long)},
	} {
		m := cloudapi.Text(c.to, "hi")
		m.IdempotencyKey = c.key
		if _, err := o.Enqueue(context.WithValue(ctx, traceKey{}, c.tc), h.number, m); err != nil {
			t.Fatal(err)
		}
	}
	runUntil(t, o, h.c, func() bool { ft.mu.Lock(); defer ft.mu.Unlock(); return ft.ends == 3 })
	want := map[string]string{"a": "00-trace-a", "b": "", "c": ""} // too long: not stored
	for k, v := range want {
		if ft.seen[k] != v {
			t.Errorf("item %s dispatched with %q, want %q", k, ft.seen[k], v)
		}
	}
	if _, err := outbox.Open(ctx, "sqlite:"+path, outbox.WithTracer(nil)); err == nil {
		t.Error("WithTracer(nil) accepted")
	}
}

// TestTraceColumnAddedToOldDatabase opens an outbox written before the
// trace column existed (the fixture of the release before schema
// versions): the migration adds it, and a traced Enqueue stores its
// context there.
func TestTraceColumnAddedToOldDatabase(t *testing.T) {
	ctx := t.Context()
	path := copyFixture(t, "v0.db")
	ft := &fakeTracer{seen: map[string]string{}}
	o, err := outbox.Open(ctx, "sqlite:"+path, outbox.WithTracer(ft))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := o.Enqueue(context.WithValue(ctx, traceKey{}, "00-x"), "106540352242922", cloudapi.Text("+237690000001", "hi")); err != nil {
		t.Fatal(err)
	}
	var tc string
	if err := o.DB().QueryRowContext(ctx, `SELECT trace FROM outbox_items WHERE recipient = '237690000001'`).Scan(&tc); err != nil || tc != "00-x" {
		t.Errorf("stored trace %q, %v", tc, err)
	}
}

type traceHarness struct {
	number string
	c      *cloudapi.Client
}

func newTraceHarness(t *testing.T) traceHarness {
	t.Helper()
	srv := cloudapitest.NewServer(t)
	c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(srv.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		t.Fatal(err)
	}
	return traceHarness{number: "106540352242922", c: c}
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
			t.Fatal("condition not met within 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
