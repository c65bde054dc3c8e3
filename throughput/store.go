package throughput

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/wapace/wapace/internal/sat"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// ErrStore is matched (with errors.Is) by the error of every decision a
// [Store] could not make. A Reservation that is not OK because of it, or a
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

// Store keeps the state of the throughput limits, so that Limiters,
// Budgets and Tiers in several processes act as one: per key, a token
// bucket with a hold ([throughputstore.BucketState]: one per business number, one per
// budget) and a set of counted recipients ([throughputstore.TierState]: one per business
// portfolio). Each method is one decision, made atomically (one Lua script,
// one transaction, one lock) on the instant and the policy figures the
// caller passes: a store keeps state only and applies exactly the pure rule
// named in each method's doc. A method that fails must change nothing.
// Implementations must be safe for concurrent use.
//
// Keys are chosen by the caller ([WithStore]); a store may prefix them.
type Store interface {
	// Reserve loads the throughputstore.BucketState of key (zero if none). If
	// throughputstore.BucketState.Next(t, n, interval, burst) is later than t + maxWait,
	// or n > burst, it changes nothing and returns ok false (the ticket's
	// Act set to that instant). Otherwise it applies throughputstore.BucketState.Reserve
	// with a fresh non-zero id (unique for the key while any ticket can be
	// cancelled), stores the result and returns the ticket and ok true.
	// The state may be forgotten once throughputstore.BucketState.Expired(now) holds.
	Reserve(ctx context.Context, key string, t time.Time, n int, interval time.Duration, burst int, maxWait time.Duration) (tk throughputstore.BucketTicket, ok bool, err error)
	// Cancel applies throughputstore.BucketState.Cancel(tk, t) and stores the result if it
	// reports true. It reports whether anything was given back.
	Cancel(ctx context.Context, key string, t time.Time, tk throughputstore.BucketTicket) (bool, error)
	// Hold applies throughputstore.BucketState.Extend(until) and returns the resulting
	// Hold (the end of the hold now in force).
	Hold(ctx context.Context, key string, until time.Time) (time.Time, error)
	// Claim loads the throughputstore.TierState of key and applies throughputstore.TierState.Claim(to, t,
	// limit, window), storing the result when it reports ok.
	Claim(ctx context.Context, key string, to uint64, t time.Time, limit int, window time.Duration) (tk throughputstore.TierTicket, ok bool, retryAt time.Time, err error)
	// Release applies throughputstore.TierState.Release(tk). It reports whether a count
	// was given back.
	Release(ctx context.Context, key string, tk throughputstore.TierTicket) (bool, error)
	// Count returns throughputstore.TierState.Count(t, window).
	Count(ctx context.Context, key string, t time.Time, window time.Duration) (int, error)
}

// WithStore keeps the state of a Limiter, Budget or Tier in s under key
// (the phone number ID for a Limiter, a name of the app and WABA for a
// Budget, of the business portfolio for a Tier), so that every one using
// the same s and key acts as one. Counts of consecutive refusals, and the
// adaptive rate after 130429, stay local to each Limiter and Budget; the
// holds they apply are shared. A nil s keeps the state in memory.
func WithStore(s Store, key string) Option {
	return func(o *options) { o.store, o.key = s, key }
}

// memStore is the in-memory bucket state behind a Limiter or Budget with
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

func (b *memBucket) reserve(t int64, n int, interval time.Duration, burst int, maxWait time.Duration) (throughputstore.BucketTicket, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reserveLocked(t, n, interval, burst, maxWait)
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

// memoryStore is the in-memory [Store] of NewMemoryStore. The zero
// memoryStore is ready to use, on the real clock.
//
// A tier's counts are dropped only once expired at the present: the earlier
// of the latest instant asked and the store's clock, so that a claim at a
// future instant never drops a count still live for callers at the present.
type memoryStore struct {
	clock   clock.Clock
	mu      sync.Mutex // protects the fields below
	buckets map[string]*memBucket
	tiers   map[string]throughputstore.TierState
	asked   int64 // the latest instant a tier was asked at
}

// NewMemoryStore returns an empty in-memory [Store]: what a Limiter, Budget
// or Tier does without one, shared by key. Use it to share limits between
// Limiters in one process, and as the reference for other stores. c is the
// clock the store judges the present by (the real one if nil). It is safe
// for concurrent use.
func NewMemoryStore(c clock.Clock) Store { return &memoryStore{clock: c} }

func (m *memoryStore) bucket(key string) *memBucket {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buckets == nil {
		m.buckets = make(map[string]*memBucket)
	}
	b := m.buckets[key]
	if b == nil {
		b = &memBucket{}
		m.buckets[key] = b
	}
	return b
}

// Reserve implements [Store]; it never fails.
func (m *memoryStore) Reserve(_ context.Context, key string, t time.Time, n int, interval time.Duration, burst int, maxWait time.Duration) (throughputstore.BucketTicket, bool, error) {
	tk, ok := m.bucket(key).reserve(t.UnixNano(), n, interval, burst, maxWait)
	return tk, ok, nil
}

// Cancel implements [Store]; it never fails.
func (m *memoryStore) Cancel(_ context.Context, key string, t time.Time, tk throughputstore.BucketTicket) (bool, error) {
	return m.bucket(key).cancel(t.UnixNano(), tk), nil
}

// Hold implements [Store]; it never fails.
func (m *memoryStore) Hold(_ context.Context, key string, until time.Time) (time.Time, error) {
	return time.Unix(0, m.bucket(key).extend(until.UnixNano())), nil
}

// tier returns the throughputstore.TierState of key, dropping counts expired at the
// present: the earlier of the latest instant asked (t or before) and the
// clock. Called with m.mu held.
func (m *memoryStore) tier(key string, t int64, window time.Duration) throughputstore.TierState {
	m.asked = max(m.asked, t)
	var now int64
	if m.clock == nil {
		now = time.Now().UnixNano()
	} else {
		now = m.clock.Now().UnixNano()
	}
	present := min(m.asked, now)
	if m.tiers == nil {
		m.tiers = make(map[string]throughputstore.TierState)
	}
	s, ok := m.tiers[key]
	if !ok {
		s = throughputstore.TierState{Last: make(map[uint64]int64)}
		m.tiers[key] = s
	}
	for to, at := range s.Last {
		if at <= present-int64(window) {
			delete(s.Last, to)
		}
	}
	return s
}

// Claim implements [Store]; it never fails. It costs O(recipients counted).
func (m *memoryStore) Claim(_ context.Context, key string, to uint64, t time.Time, limit int, window time.Duration) (throughputstore.TierTicket, bool, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.tier(key, t.UnixNano(), window)
	tk, ok, retryAt := st.Claim(to, t.UnixNano(), limit, window)
	if ok {
		return tk, true, time.Time{}, nil
	}
	return tk, false, time.Unix(0, retryAt), nil
}

// Release implements [Store]; it never fails.
func (m *memoryStore) Release(_ context.Context, key string, tk throughputstore.TierTicket) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.tiers[key]
	return ok && s.Release(tk), nil
}

// Count implements [Store]; it never fails.
func (m *memoryStore) Count(_ context.Context, key string, t time.Time, window time.Duration) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tier(key, t.UnixNano(), window).Count(t.UnixNano(), window), nil
}
