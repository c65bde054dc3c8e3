package pairlimit_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
)

// BenchmarkInterleavedFloorSmall is BenchmarkInterleavedFloor with 1,000
// live pairs, all in cache: the ratio is the instructions, not the memory.
func BenchmarkInterleavedFloorSmall(b *testing.B) {
	const n = 1000
	pairs := livePairsFor(n)
	r := rand.New(rand.NewPCG(1, 2))
	idx := make([]uint32, 1<<16)
	for i := range idx {
		idx[i] = uint32(r.IntN(n))
	}
	lim := pairlimit.New(pairlimit.Meta)
	for _, p := range pairs {
		lim.ReserveN(t0, p, 1)
	}
	f, keys := newFloor(pairs)
	const block, rounds = 20_000, 101
	var ratios []float64
	pos := 0
	runLim := func() float64 {
		start := time.Now()
		for i := range block {
			lim.ReserveN(t0, pairs[idx[(pos+i)&(len(idx)-1)]], 1)
		}
		return float64(time.Since(start).Nanoseconds()) / block
	}
	runFloor := func() float64 {
		start := time.Now()
		for i := range block {
			f.reserve(keys[idx[(pos+i)&(len(idx)-1)]], t0.UnixNano())
		}
		return float64(time.Since(start).Nanoseconds()) / block
	}
	var ls, fs []float64
	for range b.N {
		for k := range rounds {
			var l, fl float64
			if k%2 == 0 {
				l, fl = runLim(), runFloor()
			} else {
				fl, l = runFloor(), runLim()
			}
			pos += block
			ratios, ls, fs = append(ratios, l/fl), append(ls, l), append(fs, fl)
		}
	}
	med, lo, hi := quantiles(ratios)
	b.ReportMetric(med, "ratio-med")
	b.ReportMetric(lo, "ratio-min")
	b.ReportMetric(hi, "ratio-max")
	lm, _, _ := quantiles(ls)
	fm, _, _ := quantiles(fs)
	b.ReportMetric(lm, "limiter-ns")
	b.ReportMetric(fm, "floor-ns")
}
