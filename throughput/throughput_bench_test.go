package throughput_test

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/wapace/wapace/throughput"
	"golang.org/x/time/rate"
)

// BenchmarkReserveN compares the Limiter with a bare rate.Limiter of the
// same rate, both asked at a steady 1 µs apart (far above the rate, so every
// reservation queues, as in a campaign), each reading the delay as every
// caller must.
func BenchmarkReserveN(b *testing.B) {
	b.Run("throughput.Limiter", func(b *testing.B) {
		lim := throughput.New(throughput.Upgraded)
		b.ReportAllocs()
		now := t0
		var sink time.Duration
		for b.Loop() {
			now = now.Add(time.Microsecond)
			sink += lim.ReserveN(now, 1).DelayFrom(now)
		}
		_ = sink
	})
	b.Run("bare-rate.Limiter", func(b *testing.B) {
		lim := rate.NewLimiter(990, 10)
		b.ReportAllocs()
		now := t0
		var sink time.Duration
		for b.Loop() {
			now = now.Add(time.Microsecond)
			sink += lim.ReserveN(now, 1).DelayFrom(now)
		}
		_ = sink
	})
}

// BenchmarkTierAdmit admits into a window holding 100,000 recipients: each
// new recipient is admitted as the oldest one expires, so the window stays
// full.
func BenchmarkTierAdmit(b *testing.B) {
	const window = 100_000
	names := make([]string, 1<<20)
	for i := range names {
		names[i] = "+2376" + strconv.Itoa(10_000_000+i)
	}
	step := (24 * time.Hour) / window
	tier := throughput.NewTier(throughput.Tier100K, throughput.WithClock(farClock()))
	now := t0
	for i := range window {
		tier.Admit(now, names[i])
		now = now.Add(step)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := window
	for b.Loop() {
		if ok, _ := tier.Admit(now, names[i&(len(names)-1)]); !ok {
			b.Fatal("refused in a sliding window")
		}
		now = now.Add(step)
		i++
	}
}

// BenchmarkTierMemory reports the heap held per recipient with 100,000
// recipients in the window.
func BenchmarkTierMemory(b *testing.B) {
	const window = 100_000
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tier := throughput.NewTier(throughput.Tier100K)
		for i := range window {
			tier.Admit(t0.Add(time.Duration(i)*time.Millisecond), "+2376"+strconv.Itoa(10_000_000+i))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/window, "bytes/recipient")
		runtime.KeepAlive(tier)
	}
}
