package pairlimit_test

import "testing"

// BenchmarkInterleavedFloorSmall is BenchmarkInterleavedFloor with 1,000
// live pairs, all in cache: the ratio is the instructions, not the memory.
func BenchmarkInterleavedFloorSmall(b *testing.B) {
	againstFloor(b, 1000, 1<<16, 20_000, 101)
}
