package redisstore

import (
	"encoding/binary"
	"math"
	"testing"
)

// reserveReply reads both shapes of the reserve script's answer and
// rejects any other.
func TestReserveReply(t *testing.T) {
	want := [5]int64{3, 6_250_000_000, 1_764_536_400_123_456, 1_764_536_399_000_001, -1_000}
	packed := make([]byte, 0, 40)
	for _, n := range want {
		packed = binary.LittleEndian.AppendUint64(packed, math.Float64bits(float64(n)))
	}
	for _, tc := range []struct {
		name string
		v    any
		ok   bool
	}{
		{"packed", string(packed), true},
		{"array", []any{int64(3), int64(6_250_000_000), int64(1_764_536_400_123_456), int64(1_764_536_399_000_001), int64(-1_000)}, true},
		{"short string", string(packed[:32]), false},
		{"short array", []any{int64(3)}, false},
		{"integer", int64(1), false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := reserveReply(tc.v)
			if ok != tc.ok || (ok && got != want) {
				t.Errorf("reserveReply = %v, %v; want %v, %v", got, ok, want, tc.ok)
			}
		})
	}
}
