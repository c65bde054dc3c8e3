package pairlimit_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wapace/wapace/internal/interleave"
	"github.com/wapace/wapace/pairlimit"
)

// The benchmarks in this file measure against the physical floor in one
// process, interleaved: they alternate blocks of calls to the limiter and
// to the floor, so that both see the same machine load, and report the
// median ratio and its spread over the blocks. Sizes above 1M run only with
// WAPACE_BENCH_10M=1 (they take about 2 GB and a minute).

func livePairsFor(n int) []pairlimit.Pair {
	pairs := make([]pairlimit.Pair, n)
	for i := range pairs {
		p, err := pairlimit.NewPair("106540352242922", strconv.Itoa(2376_0000_0000+i*7919))
		if err != nil {
			panic(err)
		}
		pairs[i] = p
	}
	return pairs
}

func sizes(b *testing.B) []int {
	if os.Getenv("WAPACE_BENCH_10M") != "" {
		return []int{1_000_000, 10_000_000}
	}
	return []int{1_000_000}
}

// BenchmarkInterleavedFloor reports ReserveN's time per call divided by
// the floor's (a sharded map[uint64]int64 behind per-shard mutexes doing the
// same lookup, max, add and store), both with n live pairs in random order,
// in 201 alternating blocks of 10,000 calls: ratio-med, ratio-min, ratio-max,
// and each side's median ns/call.
func BenchmarkInterleavedFloor(b *testing.B) {
	for _, n := range sizes(b) {
		b.Run(fmt.Sprintf("%dM-live", n/1_000_000), func(b *testing.B) {
			againstFloor(b, n, 1<<20, 10_000, 201)
		})
	}
}

// againstFloor runs ReserveN and the floor with n live pairs, drawn at
// random from a cycle of idxLen (a power of two) indexes, in rounds
// alternating blocks of block calls, and reports as
// BenchmarkInterleavedFloor does.
func againstFloor(b *testing.B, n, idxLen, block, rounds int) {
	pairs := livePairsFor(n)
	r := rand.New(rand.NewPCG(1, 2))
	idx := make([]uint32, idxLen)
	for i := range idx {
		idx[i] = uint32(r.IntN(n))
	}
	lim := pairlimit.New(pairlimit.Meta)
	for _, p := range pairs {
		lim.ReserveN(t0, p, 1)
	}
	f, keys := newFloor(pairs)
	var blocks interleave.Blocks
	pos := 0
	runLim := func() float64 {
		start := time.Now()
		for i := range block {
			lim.ReserveN(t0, pairs[idx[(pos+i)&(len(idx)-1)]], 1)
		}
		return float64(time.Since(start).Nanoseconds()) / float64(block)
	}
	runFloor := func() float64 {
		start := time.Now()
		for i := range block {
			f.reserve(keys[idx[(pos+i)&(len(idx)-1)]], t0.UnixNano())
		}
		return float64(time.Since(start).Nanoseconds()) / float64(block)
	}
	runLim()
	runFloor() // warm up both
	b.ResetTimer()
	for range b.N {
		blocks.Add(interleave.Run(rounds, runLim, runFloor, func() { pos += block }))
	}
	blocks.Report(b, "limiter-ns", "floor-ns")
	runtime.KeepAlive(f)
}

// BenchmarkLiveMemory reports the heap held per live pair, and the heap
// the garbage collector scans because of the limiter (runtime/metrics
// /gc/scan/heap:bytes after a full collection, minus the same without it):
// the mark cost, which must not grow with the pairs.
func BenchmarkLiveMemory(b *testing.B) {
	for _, n := range sizes(b) {
		b.Run(fmt.Sprintf("%dM-live", n/1_000_000), func(b *testing.B) {
			pairs := livePairsFor(n)
			scanned := func() uint64 {
				runtime.GC()
				s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
				metrics.Read(s)
				return s[0].Value.Uint64()
			}
			for range b.N {
				var before, after runtime.MemStats
				base := scanned()
				runtime.ReadMemStats(&before)
				lim := pairlimit.New(pairlimit.Meta)
				for _, p := range pairs {
					lim.ReserveN(t0, p, 1)
				}
				scan := scanned()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "bytes/pair")
				b.ReportMetric(float64(int64(scan)-int64(base))/1024, "gc-scan-KiB")
				runtime.KeepAlive(lim)
			}
		})
	}
}

// BenchmarkGrowthLatency fills an empty limiter with n distinct pairs and
// reports the single-call latency quantiles: p50, p99.9 and max, in ns.
// Timing each call adds about 30 ns; the max includes whatever the loaded
// machine does (preemption, GC assists).
func BenchmarkGrowthLatency(b *testing.B) {
	for _, n := range sizes(b) {
		b.Run(fmt.Sprintf("%dM-new", n/1_000_000), func(b *testing.B) {
			pairs := livePairsFor(n)
			lat := make([]int64, n)
			for range b.N {
				lim := pairlimit.New(pairlimit.Meta)
				for i, p := range pairs {
					start := time.Now()
					lim.ReserveN(t0, p, 1)
					lat[i] = time.Since(start).Nanoseconds()
				}
				runtime.KeepAlive(lim)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[n/2]), "p50-ns")
			b.ReportMetric(float64(lat[n-n/1000]), "p99.9-ns")
			b.ReportMetric(float64(lat[n-n/100000]), "p99.999-ns")
			b.ReportMetric(float64(lat[n-1]), "max-ns")
		})
	}
}
