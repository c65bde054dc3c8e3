package outbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// Calls to one lane sharing transactions get the estimates they would get
// one after the other: the k-th item of the lane is due k pair intervals
// after its enqueue, each k once; all enqueued at the clock's instant.
func TestSQLiteSharedEstimates(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	o, _ := openSQLite(t, outbox.WithClock(clk))
	const callers = 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	offsets := map[time.Duration]int{}
	for range callers {
		wg.Go(func() {
			tk, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "x"))
			if err != nil {
				t.Error(err)
				return
			}
			if !tk.EnqueuedAt.Equal(clk.Now()) {
				t.Errorf("enqueued at %v, the clock says %v", tk.EnqueuedAt, clk.Now())
			}
			mu.Lock()
			offsets[tk.EstimatedAt.Sub(tk.EnqueuedAt)]++
			mu.Unlock()
		})
	}
	wg.Wait()
	for k := range callers {
		if d := time.Duration(k) * pairlimit.Meta.Interval; offsets[d] != 1 {
			t.Errorf("%d items estimated %v after their enqueue, want 1 (all: %v)", offsets[d], d, offsets)
		}
	}
}

// The Client owns the limits: an Outbox given one at Open estimates with
// its pair policy and its numbers' throughput, refuses a burst longer than
// its pair's, and refuses to Run with another Client.
func TestEstimatesUseTheClientsLimits(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	pol := pairlimit.Policy{Interval: 2 * time.Second, Burst: 3, BurstWindow: 2 * time.Second}
	c, err := cloudapi.New("TOKEN", cloudapi.WithClock(clk), cloudapi.WithThroughput(10), cloudapi.WithPairLimiter(pairlimit.New(pol)))
	if err != nil {
		t.Fatal(err)
	}
	o, _ := openSQLite(t, outbox.WithClock(clk), outbox.WithClient(c))
	offset := func(to string) time.Duration {
		t.Helper()
		tk, err := o.Enqueue(t.Context(), from, cloudapi.Text(to, "x"))
		if err != nil {
			t.Fatal(err)
		}
		return tk.EstimatedAt.Sub(tk.EnqueuedAt)
	}
	for k := range 3 { // one lane: the pair's interval apart
		if got, want := offset(recipient(1)), time.Duration(k)*pol.Interval; got != want {
			t.Errorf("lane item %d estimated %v after its enqueue, want %v (the Client's pair interval)", k, got, want)
		}
	}
	for k := range 20 { // other lanes: the number's 10 msg/s
		if got, want := offset(recipient(2+k)), time.Duration(3+k)*100*time.Millisecond; got != want {
			t.Errorf("number item %d estimated %v after its enqueue, want %v (the Client's throughput)", 3+k, got, want)
		}
	}
	msgs := []cloudapi.Message{cloudapi.Text(recipient(99), "a"), cloudapi.Text(recipient(99), "b"), cloudapi.Text(recipient(99), "c"), cloudapi.Text(recipient(99), "d")}
	if _, err := o.EnqueueBurst(t.Context(), from, msgs...); !errors.Is(err, pairlimit.ErrBurstTooLarge) {
		t.Errorf("burst of 4 with the Client's burst of 3: %v, want ErrBurstTooLarge", err)
	}
	other, err := cloudapi.New("TOKEN", cloudapi.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(t.Context(), other); !errors.Is(err, outbox.ErrInvalidOption) {
		t.Errorf("Run with a Client other than WithClient's: %v, want ErrInvalidOption", err)
	}
}

// Without WithClient, Enqueue estimates with Meta's defaults until the
// first Run, and with the latest Run's Client after it.
func TestEstimatesFollowTheRunsClient(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	o, _ := openSQLite(t, outbox.WithClock(clk))
	second := func(to string) time.Duration {
		t.Helper()
		var tk outbox.Ticket
		for range 2 {
			var err error
			if tk, err = o.Enqueue(t.Context(), from, cloudapi.Text(to, "x")); err != nil {
				t.Fatal(err)
			}
		}
		return tk.EstimatedAt.Sub(tk.EnqueuedAt)
	}
	if got := second(recipient(1)); got != pairlimit.Meta.Interval {
		t.Errorf("before any Run, a lane's second item is estimated %v after its enqueue, want Meta's %v", got, pairlimit.Meta.Interval)
	}
	pol := pairlimit.Policy{Interval: 2 * time.Second, Burst: 3, BurstWindow: 2 * time.Second}
	c, err := cloudapi.New("TOKEN", cloudapi.WithClock(clk), cloudapi.WithPairLimiter(pairlimit.New(pol)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_ = o.Run(ctx, c) // ends at once; the Outbox now knows its Client
	if got := second(recipient(2)); got != pol.Interval {
		t.Errorf("after a Run, a lane's second item is estimated %v after its enqueue, want the Client's %v", got, pol.Interval)
	}
}
