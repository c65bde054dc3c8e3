package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// floorBlock is the floor of a dispatch: plain database/sql on a file
// with the outbox's pragmas, n rows inserted (in transactions of 100)
// then each updated to its final state (in transactions of 100), as
// little as a durable queue can do per message. It returns the rate.
func floorBlock(b *testing.B, dir string, n int) float64 {
	path := filepath.Join(dir, fmt.Sprintf("floor-%d.db", time.Now().UnixNano()))
	defer os.Remove(path)
	db, err := sql.Open("sqlite", outbox.SQLiteSource(path))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE items (id INTEGER PRIMARY KEY, ikey TEXT NOT NULL UNIQUE, message TEXT NOT NULL, state TEXT NOT NULL, wamid TEXT NOT NULL DEFAULT '')`); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for _, q := range []string{`INSERT INTO items (ikey, message, state) VALUES (?, ?, 'queued')`, `UPDATE items SET state = 'accepted', wamid = ? WHERE ikey = ?`} {
		for i := 0; i < n; i += 100 {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			for j := i; j < min(i+100, n); j++ {
				key := fmt.Sprintf("key-%d", j)
				args := []any{key, `{"to":"+1` + fmt.Sprintf("%010d", j) + `","text":{"body":"benchmark"}}`}
				if q[0] == 'U' {
					args = []any{"wamid." + key, key}
				}
				if _, err := tx.ExecContext(ctx, q, args...); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// dispatchNumbers is how many business numbers a dispatch block's messages
// come from (message i from number i mod dispatchNumbers), each at an
// upgraded number's 1,000 msg/s (dispatchMPS): together they allow
// 20,000 msg/s, more than a quarter of the floor, so the numbers'
// throughput is out of the way. (One number allows 1,000 msg/s: no
// outbox reaches a quarter of the floor through one number.)
const (
	dispatchNumbers = 20
	dispatchMPS     = 1000
)

// dispatchFrom is the business number of a dispatch block's message i.
func dispatchFrom(i int) string { return fmt.Sprintf("1065403522429%02d", i%dispatchNumbers) }

// dispatchBlock enqueues n messages (one per recipient, from
// dispatchNumbers numbers, untimed) and times Run taking them from
// queued to accepted through the real client and the in-memory fake,
// limits out of the way. It returns the rate.
func dispatchBlock(b *testing.B, dir string, n int) (rate float64, cpu time.Duration) {
	ctx := context.Background()
	path := filepath.Join(dir, fmt.Sprintf("outbox-%d.db", time.Now().UnixNano()))
	defer os.Remove(path)
	all, done := acceptedAll(n)
	o, err := outbox.Open(ctx, "sqlite:"+path, all)
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	msgs := make([]cloudapi.Message, n)
	for i := range msgs {
		msgs[i] = cloudapi.Text(fmt.Sprintf("+1%010d", i), "benchmark")
	}
	for i := 0; i < n; i += 100 {
		tx, err := o.DB().BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		for k, m := range msgs[i:min(i+100, n)] {
			if _, err := o.EnqueueTx(ctx, tx, dispatchFrom(i+k), m); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return timeDispatch(b, o, n, done)
}

// acceptedAll returns an observer option and a channel closed when the
// outbox has recorded n acceptances.
func acceptedAll(n int) (outbox.Option, <-chan struct{}) {
	var accepted atomic.Int64
	done := make(chan struct{})
	return outbox.WithObserver(func(e outbox.Event) {
		if e.State == outbox.StateAccepted && accepted.Add(1) == int64(n) {
			close(done)
		}
	}), done
}

// timeDispatch times o's Run taking its n queued messages to accepted
// (until done is closed) through the real client and the in-memory
// fake, limits out of the way, and returns the rate and the process's
// CPU time over the run.
func timeDispatch(b *testing.B, o *outbox.Outbox, n int, done <-chan struct{}) (rate float64, cpu time.Duration) {
	b.Helper()
	meta := cloudapitest.NewServer(b, cloudapitest.WithThroughput(1_000_000))
	c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL), cloudapi.WithThroughput(dispatchMPS))
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	start, cpu0 := time.Now(), cpuTime()
	// (Labelled, so that a profile of the benchmark can be cut to the
	// timed dispatch: -tagfocus phase=dispatch.)
	go pprof.Do(runCtx, pprof.Labels("phase", "dispatch"), func(ctx context.Context) { errc <- o.Run(ctx, c) })
	select {
	case <-done:
	case err := <-errc:
		b.Fatalf("run: %v", err)
	}
	rate, cpu = float64(n)/time.Since(start).Seconds(), cpuTime()-cpu0
	cancel()
	<-errc
	return rate, cpu
}

// BenchmarkSQLiteDispatchVsFloor alternates blocks of the floor and of
// the outbox's dispatch (2,000 messages each) in one process, and reports
// the median ratio dispatch/floor and its spread, and both medians.
func BenchmarkSQLiteDispatchVsFloor(b *testing.B) {
	const n = 2000
	dir := b.TempDir()
	var ratios, floors, dispatches, cpuRatios, floorCPU, dispatchCPU []float64
	for b.Loop() {
		c0 := cpuTime()
		var f float64
		pprof.Do(context.Background(), pprof.Labels("phase", "floor"), func(context.Context) { f = floorBlock(b, dir, n) })
		fcpu := cpuTime() - c0
		d, dcpu := dispatchBlock(b, dir, n)
		floors, dispatches, ratios = append(floors, f), append(dispatches, d), append(ratios, d/f)
		// CPU per message, floor over dispatch: like the rate ratio, but
		// less moved by the machine's load. (The dispatch's includes the
		// client's and the fake's.)
		cpuRatios = append(cpuRatios, float64(fcpu)/float64(dcpu))
		floorCPU = append(floorCPU, float64(fcpu.Microseconds())/n)
		dispatchCPU = append(dispatchCPU, float64(dcpu.Microseconds())/n)
	}
	reportRatio(b, ratios, floors, dispatches, "dispatch")
	for _, v := range [][]float64{cpuRatios, floorCPU, dispatchCPU} {
		slices.Sort(v)
	}
	b.ReportMetric(cpuRatios[len(cpuRatios)/2], "x-floor-cpu")
	// The medians of the CPU per message (this process's, all goroutines:
	// the dispatch's includes the client's and the fake's).
	b.ReportMetric(floorCPU[len(floorCPU)/2], "floor-cpu-µs/msg")
	b.ReportMetric(dispatchCPU[len(dispatchCPU)/2], "dispatch-cpu-µs/msg")
}

// reportRatio reports the median ratio with its range, and the medians of
// the floor and of the measured rate.
func reportRatio(b *testing.B, ratios, floors, rates []float64, what string) {
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(med(ratios), "x-floor")
	b.ReportMetric(slices.Min(ratios), "x-floor-min")
	b.ReportMetric(slices.Max(ratios), "x-floor-max")
	b.ReportMetric(med(floors), "floor-msg/s")
	b.ReportMetric(med(rates), what+"-msg/s")
}

// BenchmarkSQLiteEnqueueAtDepth measures 32 goroutines calling Enqueue
// (one message each call, sharing transactions) on a queue already
// holding depth items (stored beforehand with EnqueueMany, untimed): the
// rate must not fall as the queue grows.
func BenchmarkSQLiteEnqueueAtDepth(b *testing.B) {
	for _, depth := range []int{0, 50_000, 200_000, 1_000_000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			ctx := context.Background()
			o, err := outbox.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"),
				outbox.WithCapacity(2_000_000))
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			msgs := make([]cloudapi.Message, 0, 2000)
			for i := 0; i < depth; i += 2000 {
				msgs = msgs[:0]
				for j := i; j < min(i+2000, depth); j++ {
					msgs = append(msgs, cloudapi.Text(fmt.Sprintf("+2%010d", j), "queued before"))
				}
				if _, err := o.EnqueueMany(ctx, from, msgs...); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			var wg sync.WaitGroup
			for range 32 {
				wg.Go(func() {
					for {
						i := int(next.Add(1)) - 1
						if i >= b.N {
							return
						}
						if _, err := o.Enqueue(ctx, from, cloudapi.Text(fmt.Sprintf("+1%010d", i), "benchmark")); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/msg")
		})
	}
}
