package throughput_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wapace/wapace/throughput"
	"golang.org/x/time/rate"
)

func quantiles(xs []float64) (med, lo, hi float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

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
	var ratios, ls, bs []float64
	b.ResetTimer()
	for range b.N {
		for k := range rounds {
			var l, r float64
			if k%2 == 0 {
				l, r = runLim(), runBare()
			} else {
				r, l = runBare(), runLim()
			}
			ratios, ls, bs = append(ratios, l/r), append(ls, l), append(bs, r)
		}
	}
	med, lo, hi := quantiles(ratios)
	b.ReportMetric(med, "ratio-med")
	b.ReportMetric(lo, "ratio-min")
	b.ReportMetric(hi, "ratio-max")
	lm, _, _ := quantiles(ls)
	bm, _, _ := quantiles(bs)
	b.ReportMetric(lm, "limiter-ns")
	b.ReportMetric(bm, "bare-ns")
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
	step := throughput.TierWindow / window
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
	var ns, fs, ratios []float64
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
	for range b.N {
		for k := range rounds {
			var a, f float64
			if k%2 == 0 {
				a, f = runTier(), runFloor()
			} else {
				f, a = runFloor(), runTier()
			}
			ns, fs, ratios = append(ns, a), append(fs, f), append(ratios, a/f)
		}
	}
	med, lo, hi := quantiles(ns)
	b.ReportMetric(med, "admit-ns-med")
	b.ReportMetric(lo, "admit-ns-min")
	b.ReportMetric(hi, "admit-ns-max")
	fm, _, _ := quantiles(fs)
	b.ReportMetric(fm, "floor-ns-med")
	rm, _, _ := quantiles(ratios)
	b.ReportMetric(rm, "ratio-med")
}
