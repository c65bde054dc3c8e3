package pairlimit

import (
	"fmt"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit/pairstore"
)

// BenchmarkRebuild times the rebuild of one table holding n live pairs:
// the longest pause a call can meet when a table grows. With 1,024 shards
// a table holds about a thousandth of a number's pairs (1,000 at 1M,
// 10,000 at 10M).
func BenchmarkRebuild(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 40_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			m := NewMemoryStore(nil).(*memoryStore)
			sh := &m.shards[0]
			t := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
			tb := m.newTable(sh, 1001, t)
			for i := range n {
				p := Pair{from: 1001, to: uint64(2376_0000_0000 + i)}
				_, s := m.get(sh, p.from, p.to, m.hash(p.from, p.to)<<shardBits, t)
				tb.set(s, pairstore.State{Due: t + int64(time.Minute), Top: 1})
			}
			for b.Loop() {
				m.rebuild(sh, tb, int(tb.live)+1)
			}
		})
	}
}
