package cloudapi_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/throughput"
)

// Review 8: SetMPSAt moving the slots still waiting, tried where it could
// break: a raise then a cut within a second (and, behind the review8
// tag, figure changes racing sends that give their slots back).

// mostInASecond returns the most requests srv received in a second that
// starts at or after from, and where that second starts.
func mostInASecond(srv *cloudapitest.Server, from time.Time) (int, time.Time) {
	var at []time.Time
	for _, r := range srv.Requests() {
		if !r.At.Before(from) {
			at = append(at, r.At)
		}
	}
	slices.SortFunc(at, time.Time.Compare)
	most, when := 0, time.Time{}
	for i, a := range at {
		n := 0
		for _, b := range at[i:] {
			if b.After(a.Add(time.Second)) {
				break
			}
			n++
		}
		if n > most {
			most, when = n, a
		}
	}
	return most, when
}

// TestReview8RaiseThenCutWithinASecond: 2,000 sends queued at 80 msg/s,
// raised to 1,000 after 100 ms and cut back to 80 300 ms later: the
// slots moved earlier by the raise move back later with the cut, so that
// no second starting a second after the cut holds more than 80, and
// every send is accepted once.
func TestReview8RaiseThenCutWithinASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t, cloudapitest.WithNumberThroughput(number, throughput.Upgraded))
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(srv.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		go func() {
			time.Sleep(100 * time.Millisecond)
			if err := c.Number(number).SetMPSAt(time.Now(), throughput.Upgraded); err != nil {
				t.Error(err)
			}
			time.Sleep(300 * time.Millisecond)
			if err := c.Number(number).SetMPSAt(time.Now(), throughput.Default); err != nil {
				t.Error(err)
			}
		}()
		var wg sync.WaitGroup
		for i := range 2000 {
			wg.Go(func() {
				if _, err := c.Send(t.Context(), number, cloudapi.Text("+23769"+fmt.Sprintf("%07d", i), "hi")); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		cut := start.Add(400 * time.Millisecond)
		if most, at := mostInASecond(srv, cut.Add(time.Second)); most > throughput.Default {
			t.Errorf("%d sends in the second from +%v, a second after the cut back to 80 msg/s", most, at.Sub(start))
		}
		if n := srv.Accepted(); n != 2000 {
			t.Errorf("%d accepted, want 2000", n)
		}
	})
}
