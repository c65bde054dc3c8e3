package cloudapi_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/internal/writemark"
)

// The write mark of a send's context (the outbox's "about to write" mark)
// runs once per message, before any byte of its body leaves: until it
// returns, Meta has no message; once it has returned nil, the message
// goes.
func TestWriteMarkBeforeWrite(t *testing.T) {
	meta := cloudapitest.NewServer(t)
	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var mu sync.Mutex
	var marked []string
	seen := make(chan int, 1)
	mark := func(ctx context.Context, key string) error {
		mu.Lock()
		marked = append(marked, key)
		mu.Unlock()
		seen <- len(meta.Requests()) // what Meta had received when the mark began
		<-release
		return nil
	}
	ctx := writemark.With(t.Context(), mark)
	m := cloudapi.Text("+237690000001", "hello")
	m.IdempotencyKey = "k1"
	done := make(chan error, 1)
	go func() {
		_, err := c.Send(ctx, "106540352242922", m)
		done <- err
	}()
	select {
	case n := <-seen:
		if n != 0 {
			t.Errorf("Meta had %d requests when the mark began", n)
		}
	case err := <-done:
		t.Fatalf("the send ended (%v) without calling the mark", err)
	}
	time.Sleep(50 * time.Millisecond) // a write that did not wait would arrive meanwhile
	if n := len(meta.Requests()); n != 0 {
		t.Errorf("Meta got %d requests while the mark was not committed", n)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := meta.Accepted(); n != 1 {
		t.Errorf("accepted %d, want 1", n)
	}
	if !slices.Equal(marked, []string{"k1"}) {
		t.Errorf("marked %q, want [k1]", marked)
	}
}

// A mark that fails keeps the request from being written: the message is
// not submitted, its error is the mark's, and Meta sees nothing.
func TestWriteMarkErrorWritesNothing(t *testing.T) {
	meta := cloudapitest.NewServer(t)
	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()))
	if err != nil {
		t.Fatal(err)
	}
	errMark := errors.New("mark not committed")
	ctx := writemark.With(t.Context(), func(context.Context, string) error { return errMark })
	_, err = c.Send(ctx, "106540352242922", cloudapi.Text("+237690000001", "hello"))
	if !errors.Is(err, errMark) {
		t.Fatalf("err = %v, want the mark's error", err)
	}
	if st := cloudapi.StateOf(err); st != cloudapi.StateNotSubmitted {
		t.Errorf("state %v, want %v", st, cloudapi.StateNotSubmitted)
	}
	// No byte of the body left. net/http may have sent the headers
	// first (it does when the body's first read is slow to start), and
	// the fake then records the broken request as unreadable (400): the
	// promise is about the body, which carries the message.
	for _, r := range meta.Requests() {
		if len(r.Body) != 0 || r.Status != http.StatusBadRequest {
			t.Errorf("Meta got a request with %d bytes of body, answered %d", len(r.Body), r.Status)
		}
	}
	if n := meta.Accepted(); n != 0 {
		t.Errorf("Meta accepted %d messages", n)
	}
	// The key was not sent: it may be sent again.
	if _, err := c.Send(t.Context(), "106540352242922", cloudapi.Text("+237690000001", "hello")); err != nil {
		t.Fatal(err)
	}
}

// A burst marks each bubble right before its own write, in order: a
// bubble after a failed mark is not sent.
func TestWriteMarkBurst(t *testing.T) {
	meta := cloudapitest.NewServer(t)
	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()))
	if err != nil {
		t.Fatal(err)
	}
	var marked []string
	var before []int
	errMark := errors.New("mark not committed")
	ctx := writemark.With(t.Context(), func(_ context.Context, key string) error {
		marked = append(marked, key)
		before = append(before, meta.Accepted())
		if key == "b3" {
			return errMark
		}
		return nil
	})
	var msgs []cloudapi.Message
	for _, k := range []string{"b1", "b2", "b3", "b4"} {
		m := cloudapi.Text("+237690000001", k)
		m.IdempotencyKey = k
		msgs = append(msgs, m)
	}
	res, err := c.SendBurst(ctx, "106540352242922", msgs...)
	if !errors.Is(err, errMark) {
		t.Fatalf("err = %v, want the mark's error", err)
	}
	if !slices.Equal(marked, []string{"b1", "b2", "b3"}) {
		t.Errorf("marked %q, want [b1 b2 b3]", marked)
	}
	if !slices.Equal(before, []int{0, 1, 2}) {
		t.Errorf("accepted before each mark: %v, want [0 1 2]", before)
	}
	if res[0] == nil || res[1] == nil || res[2] != nil || res[3] != nil {
		t.Errorf("results %v, want the first two only", res)
	}
	if n := meta.Accepted(); n != 2 {
		t.Errorf("accepted %d, want 2", n)
	}
}

// Without a mark in the context nothing changes (the hook is the
// outbox's, through internal/writemark; the Client exports nothing new).
func TestWriteMarkAbsent(t *testing.T) {
	if writemark.From(t.Context()) != nil {
		t.Fatal("a mark in a bare context")
	}
	var f writemark.Func = func(context.Context, string) error { return nil }
	if writemark.From(writemark.With(t.Context(), f)) == nil {
		t.Fatal("the mark was lost")
	}
}

// The fence of a send's context runs right before the body is let go,
// after the mark: a refusal writes nothing (not submitted, its error the
// fence's, the key free again), and it runs on every send, with or
// without a mark.
func TestFenceRefusalWritesNothing(t *testing.T) {
	for _, withMark := range []bool{false, true} {
		t.Run(map[bool]string{false: "no mark", true: "after the mark"}[withMark], func(t *testing.T) {
			meta := cloudapitest.NewServer(t)
			c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()))
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			errFenced := errors.New("lease ended")
			ctx := writemark.WithFence(t.Context(), func(key string) error {
				order = append(order, "fence "+key)
				return errFenced
			})
			if withMark {
				ctx = writemark.With(ctx, func(_ context.Context, key string) error {
					order = append(order, "mark "+key)
					return nil
				})
			}
			m := cloudapi.Text("+237690000001", "hello")
			m.IdempotencyKey = "k1"
			_, err = c.Send(ctx, "106540352242922", m)
			if !errors.Is(err, errFenced) {
				t.Fatalf("err = %v, want the fence's error", err)
			}
			if st := cloudapi.StateOf(err); st != cloudapi.StateNotSubmitted {
				t.Errorf("state %v, want %v", st, cloudapi.StateNotSubmitted)
			}
			want := []string{"fence k1"}
			if withMark {
				want = []string{"mark k1", "fence k1"}
			}
			if !slices.Equal(order, want) {
				t.Errorf("calls %q, want %q", order, want)
			}
			for _, r := range meta.Requests() {
				if len(r.Body) != 0 {
					t.Errorf("Meta got a request with %d bytes of body", len(r.Body))
				}
			}
			if n := meta.Accepted(); n != 0 {
				t.Errorf("Meta accepted %d messages", n)
			}
			// Not sent: the key may go again, and a fence that lets it
			// go writes it.
			ok := writemark.WithFence(t.Context(), func(string) error { return nil })
			if _, err := c.Send(ok, "106540352242922", m); err != nil {
				t.Fatal(err)
			}
			if n := meta.Accepted(); n != 1 {
				t.Errorf("accepted %d, want 1", n)
			}
		})
	}
}
