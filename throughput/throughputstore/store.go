package throughputstore

import (
	"context"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/internal/sat"
)

// Store keeps the state of the throughput limits, so that Limiters,
// Budgets and Tiers in several processes act as one
// ([github.com/wapace/wapace/throughput.WithStore]): per key, a token
// bucket with a hold ([BucketState]: one per business number, one per
// budget) and a set of counted recipients ([TierState]: one per business
// portfolio). Each method is one decision, made atomically (one Lua
// script, one transaction, one lock) on the instant and the policy figures
// the caller passes: a store keeps state only and applies exactly the pure
// rule named in each method's doc. A method that fails must change
// nothing. Implementations must be safe for concurrent use.
//
// Keys are chosen by the caller (WithStore); a store may prefix them.
type Store interface {
	// Reserve loads the BucketState of key (zero if none). If
	// BucketState.Next(t, n, interval, burst) is later than t + maxWait,
	// or n > burst, it changes nothing and returns ok false (the ticket's
	// Act set to that instant). Otherwise it applies BucketState.Reserve
	// with a fresh non-zero id (unique for the key while any ticket can be
	// cancelled), stores the result and returns the ticket and ok true.
	// The state may be forgotten once BucketState.Expired(now) holds.
	Reserve(ctx context.Context, key string, t time.Time, n int, interval time.Duration, burst int, maxWait time.Duration) (tk BucketTicket, ok bool, err error)
	// Cancel applies BucketState.Cancel(tk, t) and stores the result if it
	// reports true. It reports whether anything was given back.
	Cancel(ctx context.Context, key string, t time.Time, tk BucketTicket) (bool, error)
	// Hold applies BucketState.Extend(until) and returns the resulting
	// Hold (the end of the hold now in force).
	Hold(ctx context.Context, key string, until time.Time) (time.Time, error)
	// Claim loads the TierState of key and applies TierState.Claim(to, t,
	// limit, window), storing the result when it reports ok.
	Claim(ctx context.Context, key string, to uint64, t time.Time, limit int, window time.Duration) (tk TierTicket, ok bool, retryAt time.Time, err error)
	// Release applies TierState.Release(tk). It reports whether a count
	// was given back.
	Release(ctx context.Context, key string, tk TierTicket) (bool, error)
	// Count returns TierState.Count(t, window).
	Count(ctx context.Context, key string, t time.Time, window time.Duration) (int, error)
}

// NewMemoryStore returns an empty in-memory [Store]: what a Limiter,
// Budget or Tier does without one, shared by key. Use it to share limits
// between Limiters in one process, as a fallback while a shared store is
// down, and as the reference for other stores. c is the clock the store
// judges the present by (the real one if nil). It is safe for concurrent
// use and never fails.
func NewMemoryStore(c clock.Clock) Store { return &memoryStore{clock: c} }

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
	tiers   map[string]TierState
	asked   int64 // the latest instant a tier was asked at
}

// memBucket is one key's BucketState, decided under its own lock.
type memBucket struct {
	mu  sync.Mutex // protects the fields below
	s   BucketState
	seq uint64 // the latest ticket ID handed out
}

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
func (m *memoryStore) Reserve(_ context.Context, key string, t time.Time, n int, interval time.Duration, burst int, maxWait time.Duration) (BucketTicket, bool, error) {
	b := m.bucket(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	tn := t.UnixNano()
	if n > burst || n < 1 {
		return BucketTicket{}, false, nil
	}
	if next := b.s.Next(tn, n, interval, burst); next > sat.Add(tn, int64(maxWait)) {
		return BucketTicket{Act: next}, false, nil
	}
	b.seq++
	var tk BucketTicket
	b.s, tk = b.s.Reserve(tn, n, interval, burst, b.seq)
	return tk, true, nil
}

// Cancel implements [Store]; it never fails.
func (m *memoryStore) Cancel(_ context.Context, key string, t time.Time, tk BucketTicket) (bool, error) {
	b := m.bucket(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	var ok bool
	b.s, ok = b.s.Cancel(tk, t.UnixNano())
	return ok, nil
}

// Hold implements [Store]; it never fails.
func (m *memoryStore) Hold(_ context.Context, key string, until time.Time) (time.Time, error) {
	b := m.bucket(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s = b.s.Extend(until.UnixNano())
	return time.Unix(0, b.s.Hold), nil
}

// tier returns the TierState of key, dropping counts expired at the
// present: the earlier of the latest instant asked (t or before) and the
// clock. Called with m.mu held.
func (m *memoryStore) tier(key string, t int64, window time.Duration) TierState {
	m.asked = max(m.asked, t)
	var now int64
	if m.clock == nil {
		now = time.Now().UnixNano()
	} else {
		now = m.clock.Now().UnixNano()
	}
	present := min(m.asked, now)
	if m.tiers == nil {
		m.tiers = make(map[string]TierState)
	}
	s, ok := m.tiers[key]
	if !ok {
		s = TierState{Last: make(map[uint64]int64)}
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
func (m *memoryStore) Claim(_ context.Context, key string, to uint64, t time.Time, limit int, window time.Duration) (TierTicket, bool, time.Time, error) {
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
func (m *memoryStore) Release(_ context.Context, key string, tk TierTicket) (bool, error) {
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
