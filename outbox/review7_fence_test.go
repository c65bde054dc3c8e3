//go:build review7

package outbox_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// markedThenHeld is a transport that reads a request's body whole (so the
// Client's write-time check and write mark run and the mark commits),
// then holds the request until released before writing it: a process
// paused, or a goroutine descheduled or waiting, between its mark and its
// write.
type markedThenHeld struct {
	inner   http.RoundTripper
	marked  chan string // the request's body, once read
	release chan struct{}
}

func (h markedThenHeld) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	h.marked <- string(body)
	select {
	case <-h.release:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	r2 := r.Clone(context.WithoutCancel(r.Context()))
	r2.Body, r2.GetBody = io.NopCloser(bytes.NewReader(body)), nil
	r2.ContentLength = int64(len(body))
	return h.inner.RoundTrip(r2)
}

// Review 7: a worker paused (or stalled) after its write mark committed
// and before its request left writes the request when it resumes, however
// long after its lease ended and another worker took the lane over. B
// sweeps A's marked claim to submitted_unknown, charges its pair from A's
// claim and sends the lane's next item a pair interval later; A then
// writes the lane's earlier message: Meta receives the lane out of order
// (and the pair owes one interval more than B charged it: Meta counts
// the two as a burst, so the lane's next message may draw 131056), and
// the outbox records both accepted. mark.go's doc promises "a worker
// paused past [its lease] writes nothing when it resumes"; that holds
// only for a pause before the mark. Real windows after the mark: a
// process pause or GC between the mark and the write, and the check that
// runs again after the mark (writemark.go's ready), whose reslot waits
// for a new slot or for a hold of the number, unbounded by the lease.
//
// Wanted: Meta receives the lane in order (fence-1 before fence-2) and
// answers no 131056. Fails at 070f5ea: Meta received fence-2 fence-1.
func TestReview7MarkedWriteAfterTakeover(t *testing.T) {
	const interval = time.Second
	pairs := pairlimit.Policy{Interval: interval, Burst: 45, BurstWindow: interval}
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(interval, 45, interval))
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "outbox.db")
	a, err := outbox.Open(t.Context(), dsn, outbox.WithWriteMarks(), outbox.WithLease(time.Minute), outbox.WithConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, k := range []string{"fence-1", "fence-2"} {
		m := cloudapi.Text(recipient(1), k)
		m.IdempotencyKey = k
		if _, err := a.Enqueue(t.Context(), from, m); err != nil {
			t.Fatal(err)
		}
	}
	inner := &http.Transport{}
	t.Cleanup(inner.CloseIdleConnections)
	held := markedThenHeld{inner: inner, marked: make(chan string, 1), release: make(chan struct{}, 1)}
	ca, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithPairLimiter(pairlimit.New(pairs)),
		cloudapi.WithHTTPClient(&http.Client{Transport: held}))
	if err != nil {
		t.Fatal(err)
	}
	doneA, stopA := startRun(t.Context(), a, ca)
	if body := within(t, held.marked, "A's mark"); !strings.Contains(body, "fence-1") {
		t.Fatalf("A sends %s first, want fence-1", body)
	}
	var unwritten int64
	if err := a.DB().QueryRowContext(t.Context(), `SELECT unwritten_at FROM outbox_items WHERE ikey = 'fence-1'`).Scan(&unwritten); err != nil || unwritten != 0 {
		t.Fatalf("fence-1's mark: unwritten_at %d, %v; want 0 (marked)", unwritten, err)
	}
	// A is paused past its lease, after its mark.
	if _, err := a.DB().ExecContext(t.Context(), `UPDATE outbox_items SET lease_until = 1 WHERE ikey = 'fence-1'`); err != nil {
		t.Fatal(err)
	}
	b, err := outbox.Open(t.Context(), dsn, outbox.WithWriteMarks())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cb, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithPairLimiter(pairlimit.New(pairs)))
	if err != nil {
		t.Fatal(err)
	}
	doneB, stopB := startRun(t.Context(), b, cb)
	waitItem(t, b, "fence-2", func(it outbox.Item) bool { return it.State.Final() })
	held.release <- struct{}{} // A resumes
	it := waitItem(t, a, "fence-1", func(outbox.Item) bool {
		for _, r := range meta.Requests() {
			if r.CallbackData == "fence-1" {
				return true
			}
		}
		return false
	})
	stopRun(t, doneB, stopB)
	stopRun(t, doneA, stopA)

	var order []string
	refused := 0
	for _, r := range meta.Requests() {
		order = append(order, r.CallbackData)
		if r.Code == errcodes.Code(131056) {
			refused++
		}
	}
	t.Logf("Meta received %v; fence-1 is %v (%s)", order, it.State, it.Reason)
	if strings.Join(order, " ") != "fence-1 fence-2" {
		t.Errorf("Meta received the lane as %v, want fence-1 fence-2", order)
	}
	if refused != 0 {
		t.Errorf("%d x 131056, want 0", refused)
	}
}
