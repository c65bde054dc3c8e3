package interleave_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/wapace/wapace/internal/interleave"
)

// Run alternates which side goes first, calls next between rounds, and
// keeps each round's figures in order.
func TestRunAlternates(t *testing.T) {
	var order []string
	a := func() float64 { order = append(order, "a"); return 2 }
	b := func() float64 { order = append(order, "b"); return 4 }
	next := 0
	bl := interleave.Run(3, a, b, func() { next++ })
	if want := []string{"a", "b", "b", "a", "a", "b"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if next != 3 {
		t.Errorf("next called %d times, want 3", next)
	}
	if !slices.Equal(bl.Ratios, []float64{0.5, 0.5, 0.5}) || !slices.Equal(bl.A, []float64{2, 2, 2}) || !slices.Equal(bl.B, []float64{4, 4, 4}) {
		t.Errorf("blocks %+v", bl)
	}
}

func TestQuantiles(t *testing.T) {
	for _, c := range []struct {
		xs          []float64
		med, lo, hi float64
	}{
		{nil, 0, 0, 0},
		{[]float64{3}, 3, 3, 3},
		{[]float64{5, 1, 3}, 3, 1, 5},
		{[]float64{4, 1, 3, 2}, 3, 1, 4},
	} {
		med, lo, hi := interleave.Quantiles(c.xs)
		if med != c.med || lo != c.lo || hi != c.hi {
			t.Errorf("Quantiles(%v) = %v, %v, %v; want %v, %v, %v", c.xs, med, lo, hi, c.med, c.lo, c.hi)
		}
	}
}

func ExampleQuantiles() {
	med, lo, hi := interleave.Quantiles([]float64{1.10, 0.90, 1.02, 0.97, 1.05})
	fmt.Println(med, lo, hi)
	// Output: 1.02 0.9 1.1
}
