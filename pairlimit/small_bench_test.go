package pairlimit_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wapace/wapace/internal/interleave"
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
	var blocks interleave.Blocks
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
	for range b.N {
		blocks.Add(interleave.Run(rounds, runLim, runFloor, func() { pos += block }))
	}
	blocks.Report(b, "limiter-ns", "floor-ns")
}
