package throughput

import (
	"testing"

	"pgregory.net/rapid"
)

// TestU64MapMatchesMap: any sequence of sets and deletes leaves u64map
// holding exactly what a Go map holds, through growth, shrinking and
// backward-shift deletions (keys drawn from a small range so that probe
// clusters form).
func TestU64MapMatchesMap(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		var m u64map
		want := map[uint64]int64{}
		for range rapid.IntRange(1, 2000).Draw(t, "ops") {
			k := rapid.Uint64Range(1, 300).Draw(t, "key")
			if rapid.IntRange(0, 2).Draw(t, "op") == 0 {
				m.del(k)
				delete(want, k)
			} else {
				v := rapid.Int64().Draw(t, "val")
				m.set(k, v)
				want[k] = v
			}
		}
		if m.live != len(want) {
			t.Fatalf("live = %d, want %d", m.live, len(want))
		}
		for k := uint64(1); k <= 300; k++ {
			got, ok := m.get(k)
			w, wok := want[k]
			if ok != wok || got != w {
				t.Fatalf("get(%d) = %d, %v; want %d, %v", k, got, ok, w, wok)
			}
		}
	})
}
