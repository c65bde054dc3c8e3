package pairlimit_test

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
	"golang.org/x/time/rate"
)

// The benchmarks below run side by side in one process so that their ratios
// are meaningful: the limiter, the physical floor (a sharded map of int64
// doing the same lookup and a few integer operations), and what users write
// today (a map of *rate.Limiter behind one mutex).

const livePairs = 1_000_000

var (
	fixtureOnce sync.Once
	fixturePair []pairlimit.Pair
	fixtureIdx  []uint32 // random indexes into fixturePair
)

func fixture() ([]pairlimit.Pair, []uint32) {
	fixtureOnce.Do(func() {
		fixturePair = make([]pairlimit.Pair, livePairs)
		for i := range fixturePair {
			p, err := pairlimit.NewPair("106540352242922", strconv.Itoa(2376_0000_0000+i*7919))
			if err != nil {
				panic(err)
			}
			fixturePair[i] = p
		}
		r := rand.New(rand.NewPCG(1, 2))
		fixtureIdx = make([]uint32, 1<<20)
		for i := range fixtureIdx {
			fixtureIdx[i] = uint32(r.IntN(livePairs))
		}
	})
	return fixturePair, fixtureIdx
}

func liveLimiter(b *testing.B) *pairlimit.Limiter {
	pairs, _ := fixture()
	lim := pairlimit.New(pairlimit.Meta)
	for _, p := range pairs {
		lim.ReserveN(t0, p, 1)
	}
	b.ResetTimer()
	return lim
}

func BenchmarkReserveN(b *testing.B) {
	pairs, idx := fixture()
	b.Run("limiter/1M-live", func(b *testing.B) {
		lim := liveLimiter(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			lim.ReserveN(t0, pairs[idx[i&(len(idx)-1)]], 1)
		}
	})
	b.Run("floor-sharded-map/1M-live", func(b *testing.B) {
		f, keys := newFloor(pairs)
		b.ResetTimer()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			f.reserve(keys[idx[i&(len(idx)-1)]], t0.UnixNano())
		}
	})
	b.Run("mutex-map-rate.Limiter/1M-live", func(b *testing.B) {
		m := newRateMap(pairs)
		b.ResetTimer()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			m.reserve(pairs[idx[i&(len(idx)-1)]], t0)
		}
	})
}

func BenchmarkReserveNParallel(b *testing.B) {
	pairs, idx := fixture()
	b.Run("limiter/1M-live", func(b *testing.B) {
		lim := liveLimiter(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := rand.IntN(len(idx))
			for pb.Next() {
				lim.ReserveN(t0, pairs[idx[i&(len(idx)-1)]], 1)
				i++
			}
		})
	})
	b.Run("mutex-map-rate.Limiter/1M-live", func(b *testing.B) {
		m := newRateMap(pairs)
		b.ResetTimer()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := rand.IntN(len(idx))
			for pb.Next() {
				m.reserve(pairs[idx[i&(len(idx)-1)]], t0)
				i++
			}
		})
	})
}

// BenchmarkMemoryPerPair reports the heap held per live pair with 1,000,000
// live pairs, for the limiter and for the map of *rate.Limiter.
func BenchmarkMemoryPerPair(b *testing.B) {
	pairs, _ := fixture()
	measure := func(b *testing.B, build func() any) {
		for b.Loop() {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			keep := build()
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/livePairs, "bytes/pair")
			runtime.KeepAlive(keep)
		}
	}
	b.Run("limiter", func(b *testing.B) {
		measure(b, func() any {
			lim := pairlimit.New(pairlimit.Meta)
			for _, p := range pairs {
				lim.ReserveN(t0, p, 1)
			}
			return lim
		})
	})
	b.Run("mutex-map-rate.Limiter", func(b *testing.B) {
		measure(b, func() any { return newRateMap(pairs) })
	})
}

// floor is the physical floor: a sharded map[uint64]int64 behind per-shard
// mutexes doing one lookup, a max, an add and a store.
type floor struct {
	shards [64]struct {
		mu sync.Mutex
		m  map[uint64]int64
		_  [48]byte
	}
}

func newFloor(pairs []pairlimit.Pair) (*floor, []uint64) {
	f := new(floor)
	for i := range f.shards {
		f.shards[i].m = make(map[uint64]int64)
	}
	keys := make([]uint64, len(pairs))
	for i, p := range pairs {
		keys[i], _ = strconv.ParseUint(p.To(), 10, 64)
		f.reserve(keys[i], t0.UnixNano())
	}
	return f, keys
}

func (f *floor) reserve(k uint64, t int64) int64 {
	sh := &f.shards[(k*0x9E3779B97F4A7C15)>>58]
	sh.mu.Lock()
	due := max(sh.m[k], t)
	sh.m[k] = due + int64(6*time.Second)
	sh.mu.Unlock()
	return due
}

// rateMap is what users write today.
type rateMap struct {
	mu sync.Mutex
	m  map[pairlimit.Pair]*rate.Limiter
}

func newRateMap(pairs []pairlimit.Pair) *rateMap {
	m := &rateMap{m: make(map[pairlimit.Pair]*rate.Limiter)}
	for _, p := range pairs {
		m.reserve(p, t0)
	}
	return m
}

func (m *rateMap) reserve(p pairlimit.Pair, t time.Time) time.Duration {
	m.mu.Lock()
	l, ok := m.m[p]
	if !ok {
		l = rate.NewLimiter(rate.Every(6*time.Second), 1)
		m.m[p] = l
	}
	m.mu.Unlock()
	return l.ReserveN(t, 1).DelayFrom(t)
}
