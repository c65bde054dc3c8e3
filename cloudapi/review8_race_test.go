//go:build review8

package cloudapi_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
)

// TestReview8MovesRaceCancels: on the real clock (run it with -race),
// 1,500 sends at 1,000 msg/s, a third of them cancelled at random
// instants while they wait for their slots (their slots given back),
// while another goroutine changes the figure every 20 ms between 1,000,
// 500 and 80. Every send ends, none is accepted twice, Meta (at 1,000)
// never answers 130429, and after the last change to 80 no second holds
// more than 80.
func TestReview8MovesRaceCancels(t *testing.T) {
	if testing.Short() {
		t.Skip("real clock, a few seconds")
	}
	srv := cloudapitest.NewServer(t, cloudapitest.WithNumberThroughput(number, throughput.Upgraded))
	c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(srv.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL),
		cloudapi.WithNumberThroughput(number, throughput.Upgraded))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	last := make(chan time.Time, 1)
	go func() {
		figures := []int{1000, 500, 80}
		var at time.Time
		for i := 0; ; i++ {
			select {
			case <-stop:
				// End at 80: the last change.
				at = time.Now()
				if err := c.Number(number).SetMPSAt(at, 80); err != nil {
					t.Error(err)
				}
				last <- at
				return
			case <-time.After(20 * time.Millisecond):
			}
			if err := c.Number(number).SetMPSAt(time.Now(), figures[i%3]); err != nil {
				t.Error(err)
			}
		}
	}()
	var wg sync.WaitGroup
	for i := range 1500 {
		ctx := t.Context()
		var cancel context.CancelFunc = func() {}
		if i%3 == 0 {
			ctx, cancel = context.WithTimeout(ctx, time.Duration(rand.IntN(1500))*time.Millisecond)
		}
		wg.Go(func() {
			defer cancel()
			_, err := c.Send(ctx, number, cloudapi.Text("+23769"+fmt.Sprintf("%07d", i), "hi"))
			switch {
			case err == nil:
			case i%3 != 0:
				t.Errorf("send %d: %v", i, err)
			case cloudapi.StateOf(err) != cloudapi.StateNotSubmitted && !errors.As(err, new(*cloudapi.BackpressureError)):
				// Cancelled, or refused for its deadline: never sent.
				t.Errorf("send %d, cancelled: %v (%v)", i, err, cloudapi.StateOf(err))
			}
		})
	}
	time.Sleep(time.Second)
	close(stop)
	cutAt := <-last
	wg.Wait()
	seen := map[string]int{}
	for _, r := range srv.Requests() {
		if r.Accepted {
			seen[r.To]++
		}
	}
	for to, n := range seen {
		if n > 1 {
			t.Errorf("%s accepted %d times", to, n)
		}
	}
	if n := srv.Count(errcodes.ThroughputLimit); n > 0 {
		t.Errorf("%d x 130429", n)
	}
	if most, at := mostInASecond(srv, cutAt.Add(time.Second)); most > 80 {
		t.Errorf("%d sends in the second from %v after the last cut to 80 msg/s", most, at.Sub(cutAt))
	}
	t.Logf("%d accepted", srv.Accepted())
}
