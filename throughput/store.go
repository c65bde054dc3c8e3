package throughput

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wapace/wapace/internal/sat"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// ErrStore is matched (with errors.Is) by the error of every decision a
// [throughputstore.Store] could not make. A Reservation that is not OK because of it, or a
// Claim that is not OK because of it, means nothing was reserved: do not
// send. The error also unwraps to the store's own error and names the
// decision that failed ("throughput: store claim: ...").
var ErrStore = errors.New("throughput: store unavailable")

// storeError wraps the error a Store returned. It matches ErrStore and
// unwraps to the store's own error.
type storeError struct {
	// Op is the decision: "reserve", "cancel", "hold", "claim", "release"
	// or "count".
	Op  string
	Err error
}

// Error returns "throughput: store <op>: <err>".
func (e *storeError) Error() string { return "throughput: store " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the store's error.
func (e *storeError) Unwrap() error { return e.Err }

// Is reports whether target is ErrStore.
func (e *storeError) Is(target error) bool { return target == ErrStore }

// WithStore keeps the state of a Limiter, Budget or Tier in s under key
// (the phone number ID for a Limiter, a name of the app and WABA for a
// Budget, of the business portfolio for a Tier), so that every one using
// the same s and key acts as one. Counts of consecutive refusals, and the
// adaptive rate after 130429, stay local to each Limiter and Budget; the
// holds they apply are shared. A nil s keeps the state in memory; a store
// with an empty key is invalid ([ErrInvalidOption]).
func WithStore(s throughputstore.Store, key string) Option {
	return func(o *options) {
		if s != nil && key == "" {
			o.invalid("WithStore: an empty key")
			return
		}
		o.store, o.key = s, key
	}
}

// memBucket is the in-memory bucket state behind a Limiter or Budget with
// no Store: one lock orders and decides every call.
type memBucket struct {
	mu       sync.Mutex // protects the fields below
	s        throughputstore.BucketState
	seq      uint64
	interval time.Duration // the figures of the owner's local decisions
	burst    int

	// held is s.Hold, readable without the lock (hold): a sender reads
	// it before every write (cloudapi's write-time check). Only extend
	// moves s.Hold, and it stores held before it unlocks.
	held atomic.Int64
}

// setParams sets the figures of local decisions at t, never leaving the
// bucket more tokens than it holds.
//
// A shorter interval (a higher rate) keeps TAT: reservations already made
// keep their slots at the old rate, and new ones come after them (moving
// TAT earlier would schedule new sends among the old ones, both rates at
// once). A longer interval stretches the debt ahead of TAT from the
// earlier of t and the instant the bucket was last empty (TAT - burst x
// interval), so that an instant asked out of order, in the past or the
// future, never hands out tokens the old figures had spent.
func (b *memBucket) setParams(t int64, interval time.Duration, burst int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.interval != 0 && interval > b.interval {
		ref := min(t, sat.Add(b.s.TAT, -int64(b.burst)*int64(b.interval)))
		if b.s.TAT > ref {
			b.s.TAT = ref + int64(float64(b.s.TAT-ref)*float64(interval)/float64(b.interval))
		}
	}
	b.interval, b.burst = interval, burst
	if b.s.Interval != 0 {
		b.s.Interval = int64(interval) // the debt is restated: Reserve must not stretch it again
	}
}

// reserveLocal is reserve with the bucket's own figures. It reports
// ErrBurstTooLarge for n above the burst.
func (b *memBucket) reserveLocal(t int64, n int, maxWait time.Duration) (throughputstore.BucketTicket, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.burst {
		return throughputstore.BucketTicket{}, false, ErrBurstTooLarge
	}
	tk, ok := b.reserveLocked(t, n, b.interval, b.burst, maxWait)
	return tk, ok, nil
}

func (b *memBucket) reserveLocked(t int64, n int, interval time.Duration, burst int, maxWait time.Duration) (throughputstore.BucketTicket, bool) {
	if n > burst || n < 1 {
		return throughputstore.BucketTicket{}, false
	}
	if next := b.s.Next(t, n, interval, burst); next > sat.Add(t, int64(maxWait)) {
		return throughputstore.BucketTicket{Act: next}, false
	}
	b.seq++
	var tk throughputstore.BucketTicket
	b.s, tk = b.s.Reserve(t, n, interval, burst, b.seq)
	return tk, true
}

func (b *memBucket) cancel(t int64, tk throughputstore.BucketTicket) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ok bool
	b.s, ok = b.s.Cancel(tk, t)
	return ok
}

func (b *memBucket) extend(until int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s = b.s.Extend(until)
	b.held.Store(b.s.Hold)
	return b.s.Hold
}

func (b *memBucket) hold() int64 { return b.held.Load() }
