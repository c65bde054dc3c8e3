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
)

// benchDispatch enqueues b.N messages (one per recipient, from producers
// goroutines, in transactions of batch) while workers Run on their own
// Outbox over dsn, and reports
// the sustained rate from the first enqueue to the last acceptance, and
// the p50 and p99 enqueue latency.
func benchDispatch(b *testing.B, dsn string, workers, producers, batch int) {
	ctx := context.Background()
	meta := cloudapitest.NewServer(b, cloudapitest.WithThroughput(1_000_000))
	obs, flight := openBenchWorkers(b, dsn, workers)
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, o := range obs {
		c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL),
			cloudapi.WithThroughput(10_000))
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { _ = o.Run(runCtx, c) })
	}
	lat := make([]time.Duration, b.N/batch+1)
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	// The producers take the batches in turn, spread over the workers.
	var next atomic.Int64
	var pwg sync.WaitGroup
	for range producers {
		pwg.Go(func() {
			for {
				n := int(next.Add(1)) - 1
				i := n * batch
				if i >= b.N {
					return
				}
				o := obs[n%workers]
				t0 := time.Now()
				if batch == 1 {
					if _, err := o.Enqueue(ctx, from, cloudapi.Text(fmt.Sprintf("+1%010d", i), "benchmark")); err != nil {
						b.Error(err)
						return
					}
				} else {
					// A campaign enqueues in transactions of batch messages.
					tx, err := o.DB().BeginTx(ctx, nil)
					if err != nil {
						b.Error(err)
						return
					}
					for j := i; j < min(i+batch, b.N); j++ {
						if _, err := o.EnqueueTx(ctx, tx, from, cloudapi.Text(fmt.Sprintf("+1%010d", j), "benchmark")); err != nil {
							b.Error(err)
							return
						}
					}
					if err := tx.Commit(); err != nil {
						b.Error(err)
						return
					}
					o.Wake()
				}
				lat[n] = time.Since(t0)
			}
		})
	}
	pwg.Wait()
	if b.Failed() {
		cancel()
		wg.Wait()
		return
	}
	<-flight.done
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	cancel()
	wg.Wait()
	lat = lat[:(b.N+batch-1)/batch]
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msg/s")
	// CPU time of this process (outbox, SQLite, client and in-memory fake
	// together) per message: robust to a loaded machine, unlike msg/s.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/msg")
	b.ReportMetric(float64(flight.peak.Load()), "peak-sending")
	if batch == 1 {
		b.ReportMetric(float64(lat[len(lat)*50/100].Microseconds()), "p50-enqueue-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-enqueue-µs")
	} else {
		b.ReportMetric(float64(lat[len(lat)*50/100].Microseconds()), "p50-batch-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-batch-µs")
	}
}

// benchFlight follows the sends of a benchmark's workers through their
// Outboxes' observer: the sends in flight summed over the workers, from
// their recorded transitions, and the most at once; done closes at the
// b.N-th acceptance.
type benchFlight struct {
	sending, peak, accepted atomic.Int64
	done                    chan struct{}
}

// openBenchWorkers opens workers Outboxes over dsn, closed when the
// benchmark's run ends, all observed by one benchFlight.
func openBenchWorkers(b *testing.B, dsn string, workers int) ([]*outbox.Outbox, *benchFlight) {
	b.Helper()
	f := &benchFlight{done: make(chan struct{})}
	target := int64(b.N)
	observer := outbox.WithObserver(func(e outbox.Event) {
		switch e.State {
		case outbox.StateSending:
			for n, p := f.sending.Add(1), f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
			}
		case outbox.StateQueued:
		default:
			f.sending.Add(-1)
		}
		if e.State == outbox.StateAccepted && f.accepted.Add(1) == target {
			close(f.done)
		}
	})
	obs := make([]*outbox.Outbox, workers)
	for i := range obs {
		o, err := outbox.Open(context.Background(), dsn, observer)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { o.Close() })
		obs[i] = o
	}
	return obs, f
}

// dispatchCases are the enqueue patterns: one Enqueue per message from one
// goroutine (bounded by one commit's latency) or from 32 (like HTTP
// handlers: their calls share transactions), and EnqueueTx in
// transactions of 100 from one goroutine (a campaign).
var dispatchCases = []struct {
	name             string
	producers, batch int
}{
	{"batch=1", 1, 1},
	{"batch=1,producers=32", 32, 1},
	{"batch=100", 1, 100},
}

func BenchmarkSQLiteEnqueueDispatch(b *testing.B) {
	for _, c := range dispatchCases {
		b.Run(c.name, func(b *testing.B) {
			benchDispatch(b, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"), 1, c.producers, c.batch)
		})
	}
}

func BenchmarkPostgres4Workers(b *testing.B) {
	requirePostgres(b)
	for _, c := range dispatchCases {
		b.Run(c.name, func(b *testing.B) {
			// A fresh database per run: recipients repeat across runs, and
			// a pair sent to 6 s ago would rightly wait (pairlimit.Meta).
			benchDispatch(b, requirePostgres(b), 4, c.producers, c.batch)
		})
	}
}

// BenchmarkSQLiteEnqueue is Enqueue alone (no Run), one message per call
// from one goroutine (one transaction each) or from 32 (sharing
// transactions): the floor under the enqueue latency above.
func BenchmarkSQLiteEnqueue(b *testing.B) {
	for _, producers := range []int{1, 32} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			ctx := context.Background()
			o, err := outbox.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			cpu0 := cpuTime()
			start := time.Now()
			for range producers {
				wg.Go(func() {
					for {
						i := int(next.Add(1)) - 1
						if i >= b.N {
							return
						}
						t0 := time.Now()
						if _, err := o.Enqueue(ctx, from, cloudapi.Text(fmt.Sprintf("+1%010d", i), "benchmark")); err != nil {
							b.Error(err)
							return
						}
						lat[i] = time.Since(t0)
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if b.Failed() {
				return
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msg/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/msg")
			slices.Sort(lat)
			b.ReportMetric(float64(lat[b.N*50/100].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[b.N*99/100].Microseconds()), "p99-µs")
		})
	}
}
