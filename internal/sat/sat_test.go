package sat_test

import (
	"math"
	"math/big"
	"testing"

	"pgregory.net/rapid"

	"github.com/wapace/wapace/internal/sat"
)

// clamp is the exact result of op, clamped to the int64 range.
func clamp(v *big.Int) int64 {
	switch {
	case v.Cmp(big.NewInt(math.MaxInt64)) > 0:
		return math.MaxInt64
	case v.Cmp(big.NewInt(math.MinInt64)) < 0:
		return math.MinInt64
	}
	return v.Int64()
}

func TestAgainstBigInts(t *testing.T) {
	edge := rapid.OneOf(rapid.Int64(), rapid.SampledFrom([]int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64}))
	rapid.Check(t, func(t *rapid.T) {
		a, b := edge.Draw(t, "a"), edge.Draw(t, "b")
		if got, want := sat.Add(a, b), clamp(new(big.Int).Add(big.NewInt(a), big.NewInt(b))); got != want {
			t.Fatalf("Add(%d, %d) = %d, want %d", a, b, got, want)
		}
		if got, want := sat.Sub(a, b), clamp(new(big.Int).Sub(big.NewInt(a), big.NewInt(b))); got != want {
			t.Fatalf("Sub(%d, %d) = %d, want %d", a, b, got, want)
		}
	})
}
