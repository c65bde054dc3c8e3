package realtime_test

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/internal/program/fakemeta"
)

// BenchmarkLoopbackSend is TestOutboxFiveUpgradedNumbers without the
// outbox: b.N templates sent by 64 goroutines (the outbox's default
// concurrency) through a Client with default options over real sockets to
// wapace-fakemeta in a subprocess, spread over the five numbers upgraded
// to 1,000 msg/s each, so that the Client paces them as it does in the
// test (b.N / 5,000 s of wall time). No hog. It reports the CPU time per
// message of the sender (this process: the Client, net/http and the
// benchmark's loop) and of the fake: the real-socket path's cost.
//
//	go test -run '^$' -bench LoopbackSend -benchtime 10000x ./internal/realtime/
func BenchmarkLoopbackSend(b *testing.B) {
	const goroutines = 64
	var args []string
	var opts []cloudapi.Option
	for _, id := range upgraded {
		args = append(args, "-number-mps", id+"=1000")
		opts = append(opts, cloudapi.WithNumberThroughput(id, 1000))
	}
	meta, fake := startFakeProcess(b, args...)
	c, _, err := client(senderArgs{Meta: meta}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	var (
		next atomic.Int64
		mu   sync.Mutex
		errs []string
		wg   sync.WaitGroup
	)
	b.ReportAllocs()
	b.ResetTimer()
	cpuSelf, cpuFake := selfCPU(), cpuTime(fake.Pid)
	start := time.Now()
	for range goroutines {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				m := cloudapi.Template(fmt.Sprintf("+2377%08d", i), "winter_sale", "en",
					cloudapi.Body(cloudapi.TextParam(strconv.Itoa(i))))
				m.IdempotencyKey = "loop-" + strconv.Itoa(i)
				if _, err := c.Send(b.Context(), upgraded[i%len(upgraded)], m); err != nil {
					mu.Lock()
					if len(errs) < 10 {
						errs = append(errs, err.Error())
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	cpuSelf, cpuFake = selfCPU()-cpuSelf, cpuTime(fake.Pid)-cpuFake
	b.StopTimer()
	if len(errs) > 0 {
		b.Fatalf("send errors: %q", errs)
	}
	st, err := fakemeta.FetchStats(b.Context(), meta)
	if err != nil {
		b.Fatal(err)
	}
	if st.Accepted != b.N || st.Duplicates != 0 || len(st.Refusals) != 0 {
		b.Fatalf("the fake accepted %d of %d, %d duplicates, refusals %v", st.Accepted, b.N, st.Duplicates, st.Refusals)
	}
	b.ReportMetric(float64(cpuSelf.Microseconds())/float64(b.N), "sender-µs/msg")
	b.ReportMetric(float64(cpuFake.Microseconds())/float64(b.N), "fake-µs/msg")
	b.ReportMetric(float64(b.N)/wall.Seconds(), "msg/s")
}
