package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/wapace/wapace/internal/redistest"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/redisstore"
)

// benchPairs is how many pairs the decisions spread over.
const benchPairs = 10_000

// BenchmarkDecision compares one pair decision of this package (a
// Limiter's ReserveN over the Store: one EVALSHA) with one redis_rate
// AllowN (one EVALSHA of its GCRA script) on the same Redis, at 1 and at 64
// decisions in flight, and reports p50 and p99 latency. Run it with
// -benchtime small and -count several: sub-benchmarks alternate.
func BenchmarkDecision(b *testing.B) {
	wapace, redisRate, _ := benchOps(b)
	for _, inflight := range []int{1, 64} {
		for _, impl := range []struct {
			name string
			op   func(int) error
		}{{"redisstore", wapace}, {"redis_rate", redisRate}} {
			b.Run(fmt.Sprintf("inflight=%d/%s", inflight, impl.name), func(b *testing.B) {
				run(b, inflight, impl.op)
			})
		}
	}
}

// benchOps returns one pair decision of this package (a Limiter's ReserveN
// over the Store) and one redis_rate AllowN, on the same Redis, and the
// client.
func benchOps(b *testing.B) (wapace, redisRate func(int) error, rdb *redis.Client) {
	opt, err := redis.ParseURL(redistest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	opt.PoolSize = 128
	rdb = redis.NewClient(opt)
	b.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		b.Skip(err)
	}
	prefix := redistest.Prefix(b)
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(redisstore.New(rdb, redisstore.WithPrefix(prefix))))
	pairs := make([]pairlimit.Pair, benchPairs)
	keys := make([]string, benchPairs)
	for i := range pairs {
		pairs[i], _ = pairlimit.NewPair("106540352242922", fmt.Sprint(237690000000+i))
		keys[i] = prefix + "rr:" + fmt.Sprint(i)
	}
	rl := redis_rate.NewLimiter(rdb)
	limit := redis_rate.PerSecond(80)
	ctx := context.Background()
	wapace = func(i int) error {
		r := lim.ReserveN(time.Now(), pairs[i%benchPairs], 1)
		return r.Err()
	}
	redisRate = func(i int) error {
		_, err := rl.AllowN(ctx, keys[i%benchPairs], limit, 1)
		return err
	}
	return wapace, redisRate, rdb
}

// BenchmarkDecisionInterleaved measures the same two decisions in
// alternating blocks (redisstore, redis_rate, redisstore, ...) so that a
// loaded machine affects both alike, and logs per block and the medians:
// decisions per second, p50 and p99 latency, and Redis's own time per
// script call (INFO commandstats, EVALSHA and EVAL). Run with -benchtime 1x.
func BenchmarkDecisionInterleaved(b *testing.B) {
	wapace, redisRate, rdb := benchOps(b)
	const rounds, block = 15, 3000
	for _, inflight := range []int{1, 64} {
		var ws, rs []blockResult
		for range rounds {
			ws = append(ws, measureServer(b, rdb, inflight, block, wapace))
			rs = append(rs, measureServer(b, rdb, inflight, block, redisRate))
		}
		var ratios []float64
		for i := range ws {
			ratios = append(ratios, ws[i].perSec/rs[i].perSec)
		}
		slices.Sort(ratios)
		b.Logf("inflight=%d redisstore: %s", inflight, summary(ws))
		b.Logf("inflight=%d redis_rate: %s", inflight, summary(rs))
		b.Logf("inflight=%d throughput ratio redisstore/redis_rate: median %.2f, range %.2f-%.2f over %d block pairs",
			inflight, ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1], len(ratios))
	}
}

type blockResult struct {
	perSec   float64
	p50, p99 time.Duration
	server   float64 // µs of Redis time per script call
}

// measureServer is measure, adding Redis's time per script call.
func measureServer(b *testing.B, rdb *redis.Client, inflight, n int, op func(int) error) blockResult {
	calls0, usec0 := scriptStats(b, rdb)
	r := measure(b, inflight, n, op)
	calls1, usec1 := scriptStats(b, rdb)
	if calls1 > calls0 {
		r.server = float64(usec1-usec0) / float64(calls1-calls0)
	}
	return r
}

// scriptStats returns the calls and µs of EVALSHA and EVAL so far.
func scriptStats(b *testing.B, rdb *redis.Client) (calls, usec int64) {
	s, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(s) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		for kv := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				calls += n
			case "usec":
				usec += n
			}
		}
	}
	return calls, usec
}

func summary(rs []blockResult) string {
	med := func(f func(blockResult) float64) (float64, float64, float64) {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2], v[0], v[len(v)-1]
	}
	a, a0, a1 := med(func(r blockResult) float64 { return r.perSec })
	p, p0, p1 := med(func(r blockResult) float64 { return float64(r.p50.Microseconds()) })
	q, q0, q1 := med(func(r blockResult) float64 { return float64(r.p99.Microseconds()) })
	s, s0, s1 := med(func(r blockResult) float64 { return r.server })
	return fmt.Sprintf("%.0f decisions/s (%.0f-%.0f), p50 %.0f µs (%.0f-%.0f), p99 %.0f µs (%.0f-%.0f), Redis %.1f µs/call (%.1f-%.1f)",
		a, a0, a1, p, p0, p1, q, q0, q1, s, s0, s1)
}

// measure runs op n times from inflight goroutines.
func measure(b *testing.B, inflight, n int, op func(int) error) blockResult {
	var next atomic.Int64
	lat := make([][]time.Duration, inflight)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				t := time.Now()
				if err := op(int(i)); err != nil {
					b.Error(err)
					return
				}
				lat[g] = append(lat[g], time.Since(t))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	return blockResult{perSec: float64(n) / elapsed.Seconds(), p50: all[len(all)/2], p99: all[len(all)*99/100]}
}

// run calls op b.N times from inflight goroutines and reports latency
// percentiles and decisions per second.
func run(b *testing.B, inflight int, op func(int) error) {
	var next atomic.Int64
	lat := make([][]time.Duration, inflight)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for g := range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t := time.Now()
				if err := op(int(i)); err != nil {
					b.Error(err)
					return
				}
				lat[g] = append(lat[g], time.Since(t))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}
