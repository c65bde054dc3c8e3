// Package sat is saturating int64 arithmetic for instants and durations in
// nanoseconds: a sum or difference past the int64 range sticks at its end
// instead of wrapping round to the other one (an endless hold must stay in
// the future, not become 1677).
package sat

import "math"

// Add returns a + b, or the end of the int64 range it passes.
func Add(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// Sub returns a - b, or the end of the int64 range it passes.
func Sub(a, b int64) int64 {
	switch {
	case b > 0 && a < math.MinInt64+b:
		return math.MinInt64
	case b < 0 && a > math.MaxInt64+b:
		return math.MaxInt64
	}
	return a - b
}
