package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// Four workers, each with two Runs, race on one lane while messages keep
// arriving: every message is accepted exactly once, in FIFO order.
func TestPostgresWorkersRaceOnOneLane(t *testing.T) {
	dsn := requirePostgres(t)
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(10*time.Millisecond, 45, 10*time.Millisecond), cloudapitest.WithThroughput(10000))
	base := meta.URL()
	ctx := t.Context()
	pol := pairlimit.Policy{Interval: 15 * time.Millisecond, Burst: 45, BurstWindow: 15 * time.Millisecond}
	const workers, total = 4, 60
	obs := make([]*outbox.Outbox, workers)
	lims := make([]*pairlimit.Limiter, workers)
	for i := range obs {
		lims[i] = pairlimit.New(pol, pairlimit.WithMargin(time.Millisecond))
		o, err := outbox.Open(ctx, dsn, outbox.WithPairLimiter(lims[i]), outbox.WithIdleWake(5*time.Millisecond), outbox.WithWorkerID(fmt.Sprintf("w%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		obs[i] = o
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, o := range obs {
		for range 2 {
			c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(base), cloudapi.WithPairLimiter(lims[i]), cloudapi.WithThroughput(10000))
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { _ = o.Run(runCtx, c) })
		}
	}
	for j := range total {
		m := cloudapi.Text(recipient(7), "x")
		m.IdempotencyKey = fmt.Sprintf("r007-m%d", j)
		if _, err := obs[j%workers].Enqueue(ctx, from, m); err != nil {
			t.Fatal(err)
		}
		if j%10 == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, err := obs[0].Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Counts[outbox.StateQueued]+st.Counts[outbox.StateSending] == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	checkDelivery(t, meta, total, false)
}
