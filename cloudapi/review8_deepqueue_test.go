//go:build review8

package cloudapi_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
)

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
