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
func benchDispatch(b *testing.B, dsn string, workers, batch int) {
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
		o, err := outbox.Open(ctx, dsn, observer, outbox.WithPairLimiter(pairs), outbox.WithThroughput(1_000_000))
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
	cpu0 := cpuTime()
	start := time.Now()
	for i := 0; i < b.N; i += batch {
		o := obs[(i/batch)%workers]
		t0 := time.Now()
		if batch == 1 {
			if _, err := o.Enqueue(ctx, from, cloudapi.Text(fmt.Sprintf("+1%010d", i), "benchmark")); err != nil {
				b.Fatal(err)
			}
		} else {
			// A campaign enqueues in transactions of batch messages.
			tx, err := o.DB().BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			for j := i; j < min(i+batch, b.N); j++ {
				if _, err := o.EnqueueTx(ctx, tx, from, cloudapi.Text(fmt.Sprintf("+1%010d", j), "benchmark")); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			o.Wake()
		}
		lat = append(lat, time.Since(t0))
	}
	<-allDone
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	cancel()
	wg.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msg/s")
	// CPU time of this process (outbox, SQLite, client and in-memory fake
	// together) per message: robust to a loaded machine, unlike msg/s.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/msg")
	if batch == 1 {
		b.ReportMetric(float64(lat[len(lat)*50/100].Microseconds()), "p50-enqueue-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-enqueue-µs")
	} else {
		b.ReportMetric(float64(lat[len(lat)*50/100].Microseconds()), "p50-batch-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-batch-µs")
	}
}

func BenchmarkSQLiteEnqueueDispatch(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			benchDispatch(b, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"), 1, batch)
		})
	}
}

func BenchmarkPostgres4Workers(b *testing.B) {
	dsn := requirePostgres(b)
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			benchDispatch(b, dsn, 4, batch)
		})
	}
}
