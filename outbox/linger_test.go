package outbox_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// Run records its outcomes in batches (half of WithConcurrency's sends),
// but a send that ends while slow ones stay in flight, too few to make a
// batch, is recorded within 50 ms all the same: slow sends never hold
// the others' records (it used to wait for Run's next due instant, a third
// of the lease).
func TestOutcomeRecordedBeforeABatchFills(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		gates := map[string]chan struct{}{}
		for i := 1; i <= 3; i++ {
			gates[strings.TrimPrefix(recipient(i), "+")] = make(chan struct{})
		}
		hc := &http.Client{Transport: gated{next: meta.Client().Transport, gates: gates}}
		c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(hc), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		o, _ := openSQLite(t, outbox.WithConcurrency(16), outbox.WithLease(time.Minute))
		var keys []string
		for i := 1; i <= 3; i++ {
			tk, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(i), "x"))
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, tk.Key)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- o.Run(ctx, c) }()
		// The Client paces the three sends: a second later all are in
		// flight, held by their gates.
		time.Sleep(time.Second)
		synctest.Wait()
		close(gates[strings.TrimPrefix(recipient(1), "+")])
		synctest.Wait() // the first send has ended; two stay in flight
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if it := mustGet(t, o, keys[0]); it.State != outbox.StateAccepted {
			t.Errorf("outcome not recorded 100 ms after its send ended, two slow sends in flight: %v", it.State)
		}
		for i := 2; i <= 3; i++ {
			close(gates[strings.TrimPrefix(recipient(i), "+")])
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for _, k := range keys[1:] {
			if it := mustGet(t, o, k); it.State != outbox.StateAccepted {
				t.Errorf("%s: %v once every send ended", k, it.State)
			}
		}
		cancel()
		<-done
	})
}
