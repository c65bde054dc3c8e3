//go:build review9

package realtime_test

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
)

// stallEvery holds every request made in the first stall of each period
// until that stall ends: a sender process not scheduled for stall, again
// and again. The sends due in a stall then reach the transport together,
// and the window of writes (throughput/window.go) meets them a second
// later, bunched.
type stallEvery struct {
	inner         http.RoundTripper
	start         time.Time
	period, stall time.Duration
	n             atomic.Int64
}

func (s *stallEvery) RoundTrip(r *http.Request) (*http.Response, error) {
	s.n.Add(1)
	in := time.Since(s.start) % s.period
	if in < s.stall {
		time.Sleep(s.stall - in)
	}
	return s.inner.RoundTrip(r)
}

// TestReview9BunchesOnTheWallClock: review 9, the window of writes on
// real sockets against wapace-fakemeta (which stamps arrivals with the
// kernel's receive time), the CPU hog on, a Client with default options
// but a transport that stalls every request made in the first 300 ms of
// each 2 s: the bunches the window meets each second must leave no
// closed second at the fake over the figure. 10 s at 80 msg/s (64
// goroutines) and at 1,000 msg/s (512 goroutines). Checked: 0 x 130429,
// 0 x 131056, no duplicate, no send error.
func TestReview9BunchesOnTheWallClock(t *testing.T) {
	k := settings(t)
	for _, tc := range []struct{ mps, goroutines int }{{80, 64}, {1000, 512}} {
		t.Run(strconv.Itoa(tc.mps), func(t *testing.T) {
			meta := startFake(t, "-mps", strconv.Itoa(tc.mps))
			startHog(t, k)
			inner := &http.Transport{MaxIdleConns: 2048, MaxIdleConnsPerHost: 1024, DisableCompression: true}
			t.Cleanup(inner.CloseIdleConnections)
			tr := &stallEvery{inner: inner, start: time.Now(), period: 2 * time.Second, stall: 300 * time.Millisecond}
			c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta), cloudapi.WithHTTPClient(&http.Client{Transport: tr}),
				cloudapi.WithNumberThroughput(number, tc.mps))
			if err != nil {
				t.Fatal(err)
			}
			var (
				wg   sync.WaitGroup
				sent atomic.Int64
				mu   sync.Mutex
				errs []string
			)
			stop := time.Now().Add(time.Duration(min(k.seconds, 10)) * time.Second)
			for g := range tc.goroutines {
				wg.Go(func() {
					for i := 0; time.Now().Before(stop); i++ {
						m := cloudapi.Text(fmt.Sprintf("+2379%03d%06d", g, i), "Our winter sale starts today.")
						if _, err := c.Send(t.Context(), number, m); err != nil {
							mu.Lock()
							if len(errs) < 10 {
								errs = append(errs, err.Error())
							}
							mu.Unlock()
							continue
						}
						sent.Add(1)
					}
				})
			}
			wg.Wait()
			o := observe(t, meta, nil)
			t.Logf("%d msg/s: %d sent in %d requests; %v", tc.mps, sent.Load(), tr.n.Load(), o)
			if o.throttled != 0 || o.pair != 0 || o.duplicates != 0 {
				t.Errorf("want 0 x 130429, 0 x 131056, 0 duplicates: %v", o)
			}
			if len(errs) > 0 {
				t.Errorf("send errors: %q", errs)
			}
		})
	}
}
