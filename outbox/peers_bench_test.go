package outbox_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
)

// BenchmarkPostgres4WorkersDrain: b.N templates of one number upgraded to
// 1,000 msg/s are queued, then four Runs (each on its own Outbox, their
// Clients sharing the number's figure through a Store) drain them, Meta
// answering 200 ms after each request. It reports the rate from the
// first acceptance to the last (and as a share of the figure), this
// process's CPU per message, and the most sends in flight at once summed
// over the workers: what a crash of all four would leave
// submitted_unknown. (BenchmarkPostgres4Workers never queues deep enough
// for the wants to show: its Runs keep up with its producers.)
func BenchmarkPostgres4WorkersDrain(b *testing.B) {
	dsn := requirePostgres(b)
	const (
		id      = "106540352242931"
		workers = 4
		latency = 200 * time.Millisecond
	)
	ctx := context.Background()
	meta := cloudapitest.NewServer(b, cloudapitest.WithNumberThroughput(id, throughput.Upgraded), cloudapitest.WithHistory(0))
	store := newSharedStore()
	obs, flight := openBenchWorkers(b, dsn, workers)
	for i := 0; i < b.N; i += 1000 {
		var msgs []cloudapi.Message
		for j := i; j < min(b.N, i+1000); j++ {
			msgs = append(msgs, cloudapi.Template(fmt.Sprintf("+2376%08d", j), "winter_sale", "en"))
		}
		res, err := obs[0].EnqueueMany(ctx, id, msgs...)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := cpuTime()
	for _, o := range obs {
		hc := &http.Client{Transport: slowMeta{meta.Client().Transport, latency}}
		c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(hc), cloudapi.WithBaseURL(cloudapitest.BaseURL),
			cloudapi.WithStore(store), cloudapi.WithNumberThroughput(id, throughput.Upgraded))
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { _ = o.Run(runCtx, c) })
	}
	<-flight.done
	cpu := cpuTime() - cpu0
	b.StopTimer()
	cancel()
	wg.Wait()
	var first, last time.Time
	for _, r := range meta.Requests() {
		if r.Accepted {
			if first.IsZero() || r.At.Before(first) {
				first = r.At
			}
			if r.At.After(last) {
				last = r.At
			}
		}
	}
	rate := float64(b.N-1) / last.Sub(first).Seconds()
	b.ReportMetric(rate, "msg/s")
	b.ReportMetric(100*rate/throughput.Upgraded, "%busy")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/msg")
	b.ReportMetric(float64(flight.peak.Load()), "peak-sending")
	if k := meta.Count(errcodes.ThroughputLimit) + meta.Count(errcodes.PairRateLimit); k != 0 {
		b.Errorf("%d refusals", k)
	}
}
