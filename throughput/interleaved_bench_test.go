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
// stays full. It reports the median ns/call over 21 blocks of 100,000 calls
// with the spread.
func BenchmarkTierAdmit1M(b *testing.B) {
	const window = 1_000_000
	names := make([]string, 1<<21)
	for i := range names {
		names[i] = "+2376" + strconv.Itoa(10_000_000+i)
	}
	step := throughput.TierWindow / window
	tier := throughput.NewTier(window)
	now := t0
	for i := range window {
		tier.Admit(now, names[i])
		now = now.Add(step)
	}
	i := window
	const block, rounds = 100_000, 21
	var ns []float64
	b.ResetTimer()
	for range b.N {
		for range rounds {
			start := time.Now()
			for range block {
				if ok, _ := tier.Admit(now, names[i&(len(names)-1)]); !ok {
					b.Fatal("refused in a sliding window")
				}
				now = now.Add(step)
				i++
			}
			ns = append(ns, float64(time.Since(start).Nanoseconds())/block)
		}
	}
	med, lo, hi := quantiles(ns)
	b.ReportMetric(med, "admit-ns-med")
	b.ReportMetric(lo, "admit-ns-min")
	b.ReportMetric(hi, "admit-ns-max")
}
