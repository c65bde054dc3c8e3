package throughput_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/wapace/wapace/internal/interleave"
	"github.com/wapace/wapace/throughput"
	"golang.org/x/time/rate"
)

// BenchmarkInterleavedBare reports Limiter.ReserveN's time per call divided
// by a bare rate.Limiter's of the same rate (990/s, burst 10), both asked 1
// µs apart so that every reservation queues, each reading the delay, in 41
// alternating blocks of 100,000 calls: ratio-med, ratio-min, ratio-max and
// each side's median ns/call.
func BenchmarkInterleavedBare(b *testing.B) {
	lim := throughput.New(throughput.Upgraded)
	bare := rate.NewLimiter(990, 10)
	const block, rounds = 100_000, 41
	nowL, nowB := t0, t0
	var sink time.Duration
	runLim := func() float64 {
		start := time.Now()
		for range block {
			nowL = nowL.Add(time.Microsecond)
			sink += lim.ReserveN(nowL, 1).DelayFrom(nowL)
		}
		return float64(time.Since(start).Nanoseconds()) / block
	}
	runBare := func() float64 {
		start := time.Now()
		for range block {
			nowB = nowB.Add(time.Microsecond)
			sink += bare.ReserveN(nowB, 1).DelayFrom(nowB)
		}
		return float64(time.Since(start).Nanoseconds()) / block
	}
	runLim()
	runBare()
	var blocks interleave.Blocks
	b.ResetTimer()
	for range b.N {
		blocks.Add(interleave.Run(rounds, runLim, runBare, nil))
	}
	blocks.Report(b, "limiter-ns", "bare-ns")
	_ = sink
}

// BenchmarkTierAdmit1M admits into a window holding 1,000,000 recipients:
// each new recipient is admitted as the oldest one expires, so the window
// stays full. Interleaved with it, in 21 alternating blocks of 100,000
// calls, runs its floor: a bare map[uint64]int64 of the same size that
// inserts one key and deletes the oldest per call, with no parsing, no lock
// and no queue. It reports Admit's median ns/call with the spread, the
// floor's, and their median ratio.
func BenchmarkTierAdmit1M(b *testing.B) {
	const window = 1_000_000
	names := make([]string, 1<<21)
	keys := make([]uint64, len(names))
	for i := range names {
		names[i] = "+2376" + strconv.Itoa(10_000_000+i)
		keys[i] = uint64(2376_1000_0000 + i)
	}
	step := (24 * time.Hour) / window
	tier := throughput.NewTier(window, throughput.WithClock(farClock()))
	floor := make(map[uint64]int64, window)
	now := t0
	for i := range window {
		tier.Admit(now, names[i])
		floor[keys[i]] = int64(i)
		now = now.Add(step)
	}
	i, j := window, window
	const block, rounds = 100_000, 21
	runTier := func() float64 {
		start := time.Now()
		for range block {
			if ok, _ := tier.Admit(now, names[i&(len(names)-1)]); !ok {
				b.Fatal("refused in a sliding window")
			}
			now = now.Add(step)
			i++
		}
		return float64(time.Since(start).Nanoseconds()) / block
	}
	runFloor := func() float64 {
		start := time.Now()
		for range block {
			floor[keys[j&(len(keys)-1)]] = int64(j)
			delete(floor, keys[(j-window)&(len(keys)-1)])
			j++
		}
		return float64(time.Since(start).Nanoseconds()) / block
	}
	b.ResetTimer()
	var blocks interleave.Blocks
	for range b.N {
		blocks.Add(interleave.Run(rounds, runTier, runFloor, nil))
	}
	med, lo, hi := interleave.Quantiles(blocks.A)
	b.ReportMetric(med, "admit-ns-med")
	b.ReportMetric(lo, "admit-ns-min")
	b.ReportMetric(hi, "admit-ns-max")
	fm, _, _ := interleave.Quantiles(blocks.B)
	b.ReportMetric(fm, "floor-ns-med")
	rm, _, _ := interleave.Quantiles(blocks.Ratios)
	b.ReportMetric(rm, "ratio-med")
}
