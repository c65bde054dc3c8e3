package outbox_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// benchDispatch enqueues b.N messages (one per recipient, from one
// goroutine) while workers Run on their own Outbox over dsn, and reports
// the sustained rate from the first enqueue to the last acceptance, and
// the p50 and p99 enqueue latency.
func benchDispatch(b *testing.B, dsn string, workers int) {
	ctx := context.Background()
	meta := cloudapitest.NewServer(b, cloudapitest.WithThroughput(1_000_000))
	var accepted atomic.Int64
	allDone := make(chan struct{})
	target := int64(b.N)
	observer := outbox.WithObserver(func(e outbox.Event) {
		if e.State == outbox.StateAccepted && accepted.Add(1) == target {
			close(allDone)
		}
	})
	obs := make([]*outbox.Outbox, workers)
	for i := range obs {
		pairs := pairlimit.New(pairlimit.Meta)
		o, err := outbox.Open(ctx, dsn, observer, outbox.WithPairLimiter(pairs), outbox.WithThroughput(1_000_000),
			outbox.WithIdleWake(5*time.Millisecond))
		if err != nil {
			b.Fatal(err)
		}
		defer o.Close()
		obs[i] = o
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, o := range obs {
		c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL),
			cloudapi.WithThroughput(1_000_000))
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { _ = o.Run(runCtx, c) })
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		t0 := time.Now()
		if _, err := obs[i%workers].Enqueue(ctx, from, cloudapi.Text(fmt.Sprintf("+1%010d", i), "benchmark")); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	<-allDone
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	wg.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msg/s")
	b.ReportMetric(float64(lat[len(lat)*50/100].Microseconds()), "p50-enqueue-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-enqueue-µs")
}

func BenchmarkSQLiteEnqueueDispatch(b *testing.B) {
	benchDispatch(b, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"), 1)
}

func BenchmarkPostgres4Workers(b *testing.B) {
	benchDispatch(b, requirePostgres(b), 4)
}
