package cloudapitest_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
)

// A campaign to many recipients keeps the state of the pairs that may
// still owe, not of every pair it ever saw, and no tier bookkeeping
// without a tier.
func TestPairStatesAreForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A pair owes 1 s a message (Meta's 6 s would make the test six
		// times as long).
		srv := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1000),
			cloudapitest.WithPairRule(time.Second, 45, 6*time.Second))
		c := srv.Client()
		const n = 9_000
		for i := range n {
			if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", fmt.Sprintf("2376%08d", i), "template"); code != 0 {
				t.Fatalf("send %d refused with %d", i, code)
			}
			if i%90 == 89 {
				time.Sleep(100 * time.Millisecond) // 900 msg/s: at most 990 in a closed second
			}
		}
		// 10 s of sending: the pairs of the last second owe (900), kept
		// for 2 s more (1,800 more), and the table is swept each time it
		// doubles.
		if got := cloudapitest.PairStates(srv); got > 2*(900+1_800) {
			t.Errorf("%d pair states kept after %d recipients, want at most %d", got, n, 2*(900+1_800))
		}
		if got := cloudapitest.TierEntries(srv); got != 0 {
			t.Errorf("%d tier entries kept without a tier", got)
		}
		if srv.Accepted() != n {
			t.Errorf("accepted %d, want %d", srv.Accepted(), n)
		}
	})
}

// Forgetting a pair changes no answer: a pair whose debt ran out is
// judged as a new one, and a pair that still owes is refused however many
// other pairs came and went.
func TestForgottenPairsKeepTheRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A pair owes 100 ms a message: a full burst of 45 owes 4.5 s.
		srv := cloudapitest.NewServer(t, cloudapitest.WithThroughput(100_000),
			cloudapitest.WithPairRule(100*time.Millisecond, 45, 100*time.Millisecond))
		c := srv.Client()
		for i := range 45 {
			if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237690000001", "text"); code != 0 {
				t.Fatalf("burst message %d refused with %d", i, code)
			}
		}
		// 4.2 s of other pairs, enough to sweep the table a few times.
		for i := range 4_200 {
			post(t, c, cloudapitest.BaseURL, "1", fmt.Sprintf("2377%08d", i), "text")
			if i%100 == 99 {
				time.Sleep(100 * time.Millisecond)
			}
		}
		if got := cloudapitest.PairStates(srv); got >= 4_200 {
			t.Fatalf("%d pair states kept: the table was never swept", got)
		}
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237690000001", "text"); code != errcodes.PairRateLimit {
			t.Errorf("pair still owing at +4.2 s: code %d, want 131056", code)
		}
		time.Sleep(300 * time.Millisecond)
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237690000001", "text"); code != 0 {
			t.Errorf("pair whose debt ran out: code %d, want accepted", code)
		}
		// It was judged as new: a burst opened again.
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237690000001", "text"); code != 0 {
			t.Errorf("second message of the new burst: code %d, want accepted", code)
		}
	})
}

// The default history is bounded (DefaultHistory requests), the counts
// are not.
func TestDefaultHistoryIsBounded(t *testing.T) {
	srv := cloudapitest.NewServer(t)
	cloudapitest.RecordN(srv, cloudapitest.DefaultHistory+1)
	reqs := srv.Requests()
	if len(reqs) < cloudapitest.DefaultHistory/2 || len(reqs) > cloudapitest.DefaultHistory {
		t.Errorf("kept %d requests, want %d to %d", len(reqs), cloudapitest.DefaultHistory/2, cloudapitest.DefaultHistory)
	}
	if srv.Accepted() != cloudapitest.DefaultHistory+1 {
		t.Errorf("accepted %d, want %d", srv.Accepted(), cloudapitest.DefaultHistory+1)
	}
	// WithHistory(0) keeps every request, as before.
	all := cloudapitest.NewServer(t, cloudapitest.WithHistory(0))
	cloudapitest.RecordN(all, cloudapitest.DefaultHistory+1)
	if got := len(all.Requests()); got != cloudapitest.DefaultHistory+1 {
		t.Errorf("WithHistory(0) kept %d requests, want every one", got)
	}
}
