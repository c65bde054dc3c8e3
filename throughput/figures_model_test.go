package throughput

import (
	"math"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// figuresBySort is the model of lateness.figures: the definition written
// out with both sample sets sorted whole (as figures was first written),
// the write quantile read at its rank and every sorted check tried as the
// tolerance from the last one within the least tolerance on.
func figuresBySort(r *lateness, interval time.Duration, shared bool) (tolerance, margin time.Duration, f float64, w time.Duration) {
	checks, writes := make([]int64, r.n), make([]int64, r.n)
	for i, s := range r.s[:r.n] {
		checks[i], writes[i] = s.check, s.write
	}
	slices.Sort(checks)
	slices.Sort(writes)
	w = time.Duration(writes[r.n*writeRank/lateSamples])
	half := interval / 2
	f = 1
	if shared {
		f = r.share(interval)
	}
	spread := func(stretch time.Duration) time.Duration {
		return time.Duration(float64(stretch) / f)
	}
	// The least tolerance: minTolerance, or half an interval when that
	// is longer or when minTolerance needs more than maxMargin.
	lo := half
	if minTolerance > half && spread(minTolerance+w-half) <= maxMargin {
		lo = minTolerance
	}
	// The median check, when later, is the least tolerance: below it
	// most slots are given back.
	lo = max(lo, time.Duration(checks[r.n/2]))
	best, bestCost := lo, math.Inf(1)
	later := r.n
	for later > 0 && time.Duration(checks[r.n-later]) <= lo {
		later--
	}
	later0 := later
	for k := r.n - later - 1; k < r.n; k++ {
		tau := lo
		if k >= 0 {
			tau = max(time.Duration(checks[k]), lo)
		}
		for later > 0 && time.Duration(checks[r.n-later]) <= tau {
			later--
		}
		m := max(tau+w-half, 0)
		if k >= r.n-later0 && spread(m) > maxMargin {
			break
		}
		if cost := f*float64(later)/float64(r.n) + m.Seconds(); cost < bestCost {
			best, bestCost = tau, cost
		}
	}
	// The margin covers the tolerance and the write quantile up to
	// maxMargin, and the tolerance alone whatever it costs.
	m := min(ceilMs(spread(max(best+w-half, 0))), maxMargin)
	return best, max(m, ceilMs(spread(max(best-half, 0)))), f, w
}

// ceilMs rounds up to the millisecond.
func ceilMs(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1) / time.Millisecond * time.Millisecond
}

// TestFiguresMatchTheModel: figures (a selection of the write quantile,
// a sort of the late checks only) gives exactly the model's figures, for
// rings partly filled and wrapped, on an idle machine (every check within
// half an interval), under load (many late), and with lateness beyond
// what maxMargin covers.
func TestFiguresMatchTheModel(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		interval := rapid.SampledFrom([]time.Duration{100 * time.Microsecond, time.Millisecond, 12658227, 50 * time.Millisecond}).Draw(t, "interval")
		lateScale := rapid.SampledFrom([]time.Duration{0, interval / 4, interval, 30 * time.Millisecond, 400 * time.Millisecond}).Draw(t, "scale")
		lateShare := rapid.IntRange(0, 100).Draw(t, "late%")
		draw := func(label string) time.Duration {
			if rapid.IntRange(0, 99).Draw(t, label+"Late") >= lateShare {
				return time.Duration(rapid.Int64Range(-int64(interval), int64(interval/2)).Draw(t, label))
			}
			return time.Duration(rapid.Int64Range(0, int64(lateScale)+1).Draw(t, label))
		}
		var r lateness
		slot := int64(0)
		for range rapid.IntRange(1, 3*lateSamples).Draw(t, "samples") {
			slot += rapid.Int64Range(0, 3*int64(interval)).Draw(t, "gap")
			r.add(slot, draw("check"), draw("write"))
		}
		shared := rapid.Bool().Draw(t, "shared")
		tol, margin, f, w := r.figures(interval, shared)
		wantTol, wantMargin, wantF, wantW := figuresBySort(&r, interval, shared)
		if tol != wantTol || margin != wantMargin || f != wantF || w != wantW {
			t.Fatalf("figures = %v, %v, %v, %v; model %v, %v, %v, %v", tol, margin, f, w, wantTol, wantMargin, wantF, wantW)
		}
	})
}

// BenchmarkFigures: one recomputation of the figures from a full ring
// (ObserveSend makes one every lateEvery sends), on an idle machine's
// samples and on a loaded one's (one check in ten late), against the model.
func BenchmarkFigures(b *testing.B) {
	const interval = 12658227 // 80 msg/s
	for _, load := range []struct {
		name  string
		every int // one check in every late
	}{{"idle", 0}, {"loaded", 10}} {
		var r lateness
		for i := range lateSamples {
			check := time.Duration(i%7) * time.Millisecond / 2
			if load.every > 0 && i%load.every == 0 {
				check = time.Duration(7+i%23) * time.Millisecond
			}
			r.add(int64(i)*interval, check, time.Duration(i%11)*time.Microsecond)
		}
		b.Run(load.name, func(b *testing.B) {
			for b.Loop() {
				r.figures(interval, false)
			}
		})
		b.Run(load.name+"/model", func(b *testing.B) {
			for b.Loop() {
				figuresBySort(&r, interval, false)
			}
		})
	}
}
