//go:build review9

package cloudapi_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
)

// stallOnce holds every request made in [from, from+d) until from+d, on
// the bubble's clock: a sender process not scheduled for d.
type stallOnce struct {
	inner    http.RoundTripper
	from, to time.Time
	n        atomic.Int64
}

func (s *stallOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	s.n.Add(1)
	if now := time.Now(); !now.Before(s.from) && now.Before(s.to) {
		time.Sleep(s.to.Sub(now))
	}
	return s.inner.RoundTrip(r)
}

// bunchRun sends n texts from one number at mps, all queued at once, on
// simulated time, through the in-memory fake (which reports the write to
// httptrace); the transport stalls for stall from 2 s. It returns, per
// second after the stall, the largest number of writes at one instant,
// and the requests made.
func bunchRun(t *testing.T, mps, n int, stall time.Duration) (per []int, made int64, refused int, most int) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t, cloudapitest.WithNumberThroughput(number, mps), cloudapitest.WithHistory(n+10))
		start := time.Now()
		tr := &stallOnce{inner: srv.Client().Transport, from: start.Add(2 * time.Second), to: start.Add(2*time.Second + stall)}
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(&http.Client{Transport: tr}), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Number(number).SetMPSAt(start, mps); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var failed atomic.Int64
		for i := range n {
			wg.Go(func() {
				if _, err := c.Send(t.Context(), number, cloudapi.Text(fmt.Sprintf("+2376930%06d", i), "hi")); err != nil {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		if f := failed.Load(); f != 0 {
			t.Errorf("%d sends failed", f)
		}
		at := wholeAt(srv)
		most, _ = mostInAClosedSecond(at, time.Time{})
		same := map[time.Time]int{}
		for _, a := range at {
			same[a]++
		}
		end := tr.to
		for a := range same {
			if a.After(end) {
				end = a
			}
		}
		per = make([]int, int(end.Sub(tr.to)/time.Second)+1)
		for a, k := range same {
			if !a.Before(tr.to) {
				i := int(a.Sub(tr.to) / time.Second)
				per[i] = max(per[i], k)
			}
		}
		made, refused = tr.n.Load(), srv.Count(errcodes.ThroughputLimit)
	})
	return per, made, refused, most
}

// Review 9, measurement: how long the bunch after a stall comes back,
// each second, at 80 and at 1,000 msg/s (window.go says it shrinks by the
// 1 % of the figure the bucket leaves free each second). Logged, not
// asserted; fails only on a refusal or more than the figure in a second.
func TestReview9BunchAfterAStall(t *testing.T) {
	for _, tc := range []struct {
		mps, n int
		stall  time.Duration
	}{
		{80, 80 * 40, 500 * time.Millisecond},
		{1000, 1000 * 25, 200 * time.Millisecond},
	} {
		t.Run(fmt.Sprint(tc.mps), func(t *testing.T) {
			per, made, refused, most := bunchRun(t, tc.mps, tc.n, tc.stall)
			last := -1
			for i, k := range per {
				if k > max(2, tc.mps/100) {
					last = i
				}
			}
			t.Logf("%d msg/s, %d sends, stall %v: %d requests made; most in a closed second %d; largest same-instant group per second after the stall: %v; last second with a bunch over %d: %d",
				tc.mps, tc.n, tc.stall, made, most, per, max(2, tc.mps/100), last)
			if refused != 0 || most > tc.mps {
				t.Errorf("%d x 130429, %d in a closed second", refused, most)
			}
		})
	}
}
