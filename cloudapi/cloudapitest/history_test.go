package cloudapitest_test

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
)

// A long run keeps its counts but not every body (nor, with WithHistory,
// every request).
func TestBoundedHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen int
		srv := cloudapitest.NewServer(t, cloudapitest.WithBodies(3), cloudapitest.WithHistory(10), cloudapitest.WithThroughput(1000),
			cloudapitest.WithRequestObserver(func(cloudapitest.Request) { seen++ }))
		c := srv.Client()
		for i := range 25 {
			post(t, c, cloudapitest.BaseURL, "1234567", fmt.Sprintf("+1555000%04d", i), "text")
		}
		srv.FailNext(errcodes.PairRateLimit)
		post(t, c, cloudapitest.BaseURL, "1234567", "+15550000000", "text")
		reqs := srv.Requests()
		if len(reqs) < 5 || len(reqs) > 10 || reqs[len(reqs)-1].Code != errcodes.PairRateLimit {
			t.Fatalf("kept %d requests, want 5 to 10, the latest last", len(reqs))
		}
		withBody := 0
		for _, r := range reqs {
			if r.Body != nil {
				withBody++
			}
		}
		if withBody != 3 || reqs[len(reqs)-1].Body == nil {
			t.Errorf("%d requests kept their body, want the latest 3", withBody)
		}
		if srv.Accepted() != 25 || srv.Count(errcodes.PairRateLimit) != 1 || seen != 26 {
			t.Errorf("counts: accepted %d, 131056 %d, observed %d", srv.Accepted(), srv.Count(errcodes.PairRateLimit), seen)
		}
	})
	// By default the latest requests are kept (TestDefaultHistoryIsBounded),
	// and the latest DefaultBodies bodies.
	srv := cloudapitest.NewServer(t)
	post(t, srv.Client(), cloudapitest.BaseURL, "1234567", "+15550000001", "text")
	if r := srv.Requests(); len(r) != 1 || r[0].Body == nil {
		t.Fatalf("default history: %+v", r)
	}
}
