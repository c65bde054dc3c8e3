package outbox_test

import (
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
	o, _ := openSQLite(t, outbox.WithClock(clk), outbox.WithPairPolicy(pairlimit.Meta))
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
