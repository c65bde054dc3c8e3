// Package interleave measures code against its baseline the way this
// module's benchmarks must: both in one process, in alternating blocks
// (the baseline first on odd rounds), so that both see the same machine
// load, with the median ratio and its spread reported instead of one mean.
package interleave

import (
	"slices"
	"testing"
)

// Blocks holds one figure per block and side: ns per call of the code
// measured (A) and of its baseline (B), and their ratio A/B.
type Blocks struct {
	Ratios, A, B []float64
}

// Run runs rounds pairs of blocks, a and b alternately, each returning its
// ns per call; between rounds it calls next, if not nil (to move on to
// fresh input, say).
func Run(rounds int, a, b func() float64, next func()) Blocks {
	var bl Blocks
	for k := range rounds {
		var x, y float64
		if k%2 == 0 {
			x, y = a(), b()
		} else {
			y, x = b(), a()
		}
		if next != nil {
			next()
		}
		bl.add(x, y)
	}
	return bl
}

// Add appends the blocks of more.
func (bl *Blocks) Add(more Blocks) {
	bl.Ratios = append(bl.Ratios, more.Ratios...)
	bl.A = append(bl.A, more.A...)
	bl.B = append(bl.B, more.B...)
}

func (bl *Blocks) add(a, b float64) {
	bl.Ratios, bl.A, bl.B = append(bl.Ratios, a/b), append(bl.A, a), append(bl.B, b)
}

// Report reports ratio-med, ratio-min and ratio-max, and each side's
// median ns per call under the units aUnit and bUnit.
func (bl Blocks) Report(b *testing.B, aUnit, bUnit string) {
	med, lo, hi := Quantiles(bl.Ratios)
	b.ReportMetric(med, "ratio-med")
	b.ReportMetric(lo, "ratio-min")
	b.ReportMetric(hi, "ratio-max")
	am, _, _ := Quantiles(bl.A)
	bm, _, _ := Quantiles(bl.B)
	b.ReportMetric(am, aUnit)
	b.ReportMetric(bm, bUnit)
}

// Quantiles returns the median, lowest and highest of xs (zeros if empty).
func Quantiles(xs []float64) (med, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}
