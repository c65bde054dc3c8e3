package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// A resent item keeps its place in its lane: once its resend is due it is
// the lane's next send, even under steady traffic to the same user that
// keeps the lane full (it used to go behind every item queued meanwhile,
// and behind every later one too, so traffic could hold it back until it
// expired).
func TestResendKeepsLanePlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		pairs := pairlimit.New(pairlimit.Meta)
		c := newClient(t, meta, cloudapi.WithPairLimiter(pairs))
		o, _ := openSQLite(t, outbox.WithClient(c), outbox.WithResend(outbox.ResendPolicy{After: time.Hour, Max: 1}))
		meta.Script(cloudapitest.Failure{Status: 502})
		bm := cloudapi.Text(recipient(2), "b")
		bm.ExpiresAt = time.Now().Add(66 * time.Minute) // the resend is due at about +61 min
		b, err := o.Enqueue(t.Context(), from, bm)
		if err != nil {
			t.Fatal(err)
		}
		runFor(t, o, c, time.Minute)
		if it := mustGet(t, o, b.Key); it.State != outbox.StateSubmittedUnknown {
			t.Fatalf("b: %v", it.State)
		}

		// From just before the resend is due until after b's deadline, a
		// message to the same user every 4 s: faster than the pair pace,
		// so the lane is never empty.
		time.Sleep(time.Hour - 3*time.Minute)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { _ = o.Run(ctx, c) })
		var keys []string
		for time.Now().Before(bm.ExpiresAt.Add(time.Minute)) {
			tk, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(2), "more"))
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, tk.Key)
			time.Sleep(4 * time.Second)
		}
		cancel()
		wg.Wait()

		it := mustGet(t, o, b.Key)
		var requeued time.Time
		for _, tr := range it.History {
			if tr.State == outbox.StateQueued && strings.HasPrefix(tr.Reason, "resend policy") {
				requeued = tr.At
			}
		}
		if requeued.IsZero() {
			t.Fatalf("b never queued again: %v (%s) %+v", it.State, it.Reason, it.History)
		}
		var resentAt time.Time
		var between []string
		for _, r := range meta.Requests() {
			if r.To != strings.TrimPrefix(recipient(2), "+") || r.At.Before(requeued) {
				continue
			}
			if r.CallbackData == b.Key+"#r1" {
				resentAt = r.At
				break
			}
			between = append(between, r.CallbackData)
		}
		if resentAt.IsZero() {
			t.Fatalf("b's resend never sent (b %v: %s) while %d messages to the same user were queued", it.State, it.Reason, len(keys))
		}
		if len(between) > 0 || resentAt.After(requeued.Add(pairlimit.Meta.Interval+time.Second)) {
			t.Fatalf("b's resend was due at %v but sent %v later, after %d newer messages of its lane",
				requeued.Format(time.TimeOnly), resentAt.Sub(requeued), len(between))
		}
		if it.State != outbox.StateAccepted {
			t.Fatalf("b after its resend: %v (%s)", it.State, it.Reason)
		}
		if n := meta.Count(errcodes.PairRateLimit); n != 0 {
			t.Fatalf("%d x 131056", n)
		}
	})
}

// The same with two Postgres workers on the real clock: under traffic
// faster than the pair pace, a resent item is sent next in its lane (at
// most the send already in flight goes first), not dead-lettered behind
// the newer messages.
func TestPostgresResendKeepsLanePlace(t *testing.T) {
	dsn := requirePostgres(t)
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond), cloudapitest.WithThroughput(10000))
	ctx := t.Context()
	const workers = 2
	obs := make([]*outbox.Outbox, workers)
	clients := make([]*cloudapi.Client, workers)
	for i := range obs {
		c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithPairLimiter(pairlimit.New(fastPairs)), cloudapi.WithThroughput(10000))
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
		o, err := outbox.Open(ctx, dsn, outbox.WithClient(c), outbox.WithIdleWake(10*time.Millisecond),
			outbox.WithWorkerID(fmt.Sprintf("w%d", i)), outbox.WithResend(outbox.ResendPolicy{After: 300 * time.Millisecond, Max: 1}))
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		obs[i] = o
	}
	meta.Script(cloudapitest.Failure{Status: 502})
	bm := cloudapi.Text(recipient(2), "b")
	bm.IdempotencyKey = "b"
	bm.ExpiresAt = time.Now().Add(3 * time.Second)
	if _, err := obs[0].Enqueue(ctx, from, bm); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, o := range obs {
		c := clients[i]
		wg.Go(func() { _ = o.Run(runCtx, c) })
	}
	// A message to the same user every 30 ms (twice the pair pace) until
	// after b's deadline.
	for j := 0; time.Now().Before(bm.ExpiresAt.Add(200 * time.Millisecond)); j++ {
		m := cloudapi.Text(recipient(2), "more")
		m.IdempotencyKey = fmt.Sprintf("more-%d", j)
		if _, err := obs[j%workers].Enqueue(ctx, from, m); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond)
	}
	cancel()
	wg.Wait()

	it := mustGet(t, obs[0], "b")
	var requeued time.Time
	for _, tr := range it.History {
		if tr.State == outbox.StateQueued && strings.HasPrefix(tr.Reason, "resend policy") {
			requeued = tr.At
		}
	}
	if requeued.IsZero() {
		t.Fatalf("b never queued again: %v (%s)", it.State, it.Reason)
	}
	var between []string
	resent := false
	for _, r := range meta.Requests() {
		if r.At.Before(requeued) {
			continue
		}
		if r.CallbackData == "b#r1" {
			resent = true
			break
		}
		between = append(between, r.CallbackData)
	}
	if !resent || len(between) > 1 {
		t.Fatalf("b (%v: %s): resent %v, after %d newer messages of its lane sent once it was due: %q", it.State, it.Reason, resent, len(between), between)
	}
	if it.State != outbox.StateAccepted {
		t.Fatalf("b after its resend: %v (%s)", it.State, it.Reason)
	}
	if n := meta.Count(errcodes.PairRateLimit); n != 0 {
		t.Fatalf("%d x 131056", n)
	}
}
