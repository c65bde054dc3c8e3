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
// arriving: every message is accepted exactly once, in FIFO order, and
// the lane keeps its pair's pace across workers (no 131056).
//
// The fake judges the pace by when requests arrive, the limiters by when
// they decide, so the margin must absorb the delay between the two on a
// loaded machine: with a margin m over the fake's own rule (interval and
// burst window I), a 131056 needs one request to arrive more than
// 2(I+m)-2I = 2m after its claim while the next two go at once. A margin
// of 1 ms with a 15 ms interval against the fake's 10 (12 ms of slack)
// failed about one run in forty on a loaded 2-core machine: a request
// arrived 91 ms after its claim, the next one 2 ms after it (joining its
// burst) and the third 17 ms later, inside the burst's debt. A pacing
// fault between workers still shows: a handed-over lane sent without
// waiting goes a few milliseconds after the previous send.
func TestPostgresWorkersRaceOnOneLane(t *testing.T) {
	dsn := requirePostgres(t)
	const interval, margin = 10 * time.Millisecond, 150 * time.Millisecond
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(interval, 45, interval), cloudapitest.WithThroughput(10000))
	base := meta.URL()
	ctx := t.Context()
	pol := pairlimit.Policy{Interval: interval, Burst: 45, BurstWindow: interval}
	const workers, total = 4, 40
	obs := make([]*outbox.Outbox, workers)
	lims := make([]*pairlimit.Limiter, workers)
	for i := range obs {
		lims[i] = pairlimit.New(pol, pairlimit.WithMargin(margin))
		o, err := outbox.Open(ctx, dsn, outbox.WithIdleWake(5*time.Millisecond), outbox.WithWorkerID(fmt.Sprintf("w%d", i)))
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
	// The lane drains in about total x (interval+margin) = 6.4 s; the
	// deadline only ends a run that would otherwise never finish.
	deadline := time.Now().Add(2 * time.Minute)
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
