//go:build unix

package cloudapi_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
)

// BenchmarkOneNumberPaced measures how close one number configured at N
// messages per second comes to N on the wall clock: 64 goroutines send
// from the one number, each message to a new recipient (no pair waits),
// through the in-memory fake counting arrivals at the same N (any second
// holding more than N is a 130429). Each iteration sends two seconds'
// worth (2 x N messages). It reports the rate between the first and the
// last acceptance as a share of N (rate/N), the process's CPU time per
// send (user + system, GC included), and the refusals the fake counted
// (130429/op and 131056/op: both must be 0). Run it with -benchtime 1x or
// a few x; -cpu 2 is the machine it was written for.
func BenchmarkOneNumberPaced(b *testing.B) {
	for _, mps := range []int{1_000, 5_000, 10_000} {
		b.Run(fmt.Sprintf("mps=%d", mps), func(b *testing.B) { benchOneNumber(b, mps) })
	}
}

// BenchmarkOneNumberPacedHeadroom is BenchmarkOneNumberPaced with the
// number's limiter built with throughput.WithHeadroom(0): a fixed margin,
// which does not follow the lateness observed.
func BenchmarkOneNumberPacedHeadroom(b *testing.B) {
	for _, mps := range []int{1_000, 5_000, 10_000} {
		b.Run(fmt.Sprintf("mps=%d", mps), func(b *testing.B) { benchOneNumber(b, mps, throughput.WithHeadroom(0)) })
	}
}

func benchOneNumber(b *testing.B, mps int, opts ...throughput.Option) {
	const senders = 64
	var rates []float64
	var cpu time.Duration
	var refused, pairRefused, sends int
	for range b.N {
		srv := cloudapitest.NewServer(b, cloudapitest.WithThroughput(mps))
		c, err := cloudapi.New("BENCH_TOKEN", cloudapi.WithHTTPClient(&http.Client{Transport: srv.Client().Transport}),
			cloudapi.WithBaseURL(cloudapitest.BaseURL), cloudapi.WithThroughput(mps, opts...))
		if err != nil {
			b.Fatal(err)
		}
		n := 2 * mps
		msgs := make([]cloudapi.Message, n)
		for i := range msgs {
			msgs[i] = cloudapi.Text(fmt.Sprintf("+2376%08d", i), "hello")
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		start := cpuTime(b)
		for range senders {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
					if _, err := c.Send(b.Context(), number, msgs[i]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.Logf("margin %v, tolerance %v", c.Number(number).Margin(), c.Number(number).Tolerance())
		cpu += cpuTime(b) - start
		sends += n
		rates = append(rates, arrivalRate(srv)/float64(mps))
		refused += srv.Count(errcodes.ThroughputLimit)
		pairRefused += srv.Count(errcodes.PairRateLimit)
	}
	sum := 0.0
	for _, r := range rates {
		sum += r
	}
	b.ReportMetric(sum/float64(len(rates)), "rate/N")
	b.ReportMetric(float64(cpu.Microseconds())/float64(sends), "cpu-µs/send")
	b.ReportMetric(float64(refused)/float64(b.N), "130429/op")
	b.ReportMetric(float64(pairRefused)/float64(b.N), "131056/op")
}
