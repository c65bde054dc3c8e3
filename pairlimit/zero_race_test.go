package pairlimit

import (
	"sync"
	"testing"
	"time"
)

// TestZeroLimiterConcurrentFirstUse: a zero Limiter is documented ready to
// use, so its first calls may come from many goroutines at once. ReserveN's
// hot path must not read the limiter's fields before it knows they are set
// (under -race, a read of l.mem ordered before the ready flag is a data race
// with the lazy initialisation).
func TestZeroLimiterConcurrentFirstUse(t *testing.T) {
	t.Parallel()
	for range 50 {
		var l Limiter
		p, err := NewPair("106540352242922", "237690000001")
		if err != nil {
			t.Fatal(err)
		}
		at := time.Unix(1_790_000_000, 0)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if r := l.ReserveN(at, p, 1); !r.OK() {
					t.Error(r.Err())
				}
			})
		}
		wg.Wait()
	}
}
