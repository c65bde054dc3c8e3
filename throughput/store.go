package throughput

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/wapace/wapace/internal/sat"
)

// ErrStore is matched (with errors.Is) by the error of every decision a
// [Store] could not make. A Reservation that is not OK because of it, or a
// Claim that is not OK because of it, means nothing was reserved: do not
// send.
var ErrStore = errors.New("throughput: store unavailable")

// StoreError wraps the error a Store returned. It matches ErrStore and
// unwraps to the store's own error.
type StoreError struct {
	// Op is the decision: "reserve", "cancel", "hold", "claim", "release"
	// or "count".
	Op  string
	Err error
}

// Error returns "throughput: store <op>: <err>".
func (e *StoreError) Error() string { return "throughput: store " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the store's error.
func (e *StoreError) Unwrap() error { return e.Err }

// Is reports whether target is ErrStore.
func (e *StoreError) Is(target error) bool { return target == ErrStore }

// Store keeps the state of the throughput limits, so that Limiters,
// Budgets and Tiers in several processes act as one: per key, a token
// bucket with a hold ([BucketState]: one per business number, one per
// budget) and a set of counted recipients ([TierState]: one per business
// portfolio). Each method is one decision, made atomically (one Lua script,
// one transaction, one lock) on the instant and the policy figures the
// caller passes: a store keeps state only and applies exactly the pure rule
// named in each method's doc. A method that fails must change nothing.
// Implementations must be safe for concurrent use.
//
// Keys are chosen by the caller ([WithStore]); a store may prefix them.
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

// WithStore keeps the state of a Limiter, Budget or Tier in s under key
// (the phone number ID for a Limiter, a name of the app and WABA for a
// Budget, of the business portfolio for a Tier), so that every one using
// the same s and key acts as one. Counts of consecutive refusals, and the
// adaptive rate after 130429, stay local to each Limiter and Budget; the
// holds they apply are shared. A nil s keeps the state in memory.
func WithStore(s Store, key string) Option {
	return func(o *options) { o.store, o.key = s, key }
}

// BucketState is a token bucket as a Store keeps it, in the form of a
// generic cell rate algorithm: one token per interval, up to burst at once.
// Instants are Unix nanoseconds. The zero BucketState is a full bucket with
// no hold.
type BucketState struct {
	// TAT is the theoretical arrival time: the bucket is full at TAT, and
	// holds burst - (TAT - t) / interval tokens at t.
	TAT int64
	// Hold is the end of a hold before which nothing is admitted.
	Hold int64
	// Top is the ID of the latest reservation that can be given back.
	Top uint64
	// Interval is the interval, in nanoseconds, the debt ahead of TAT is
	// counted in: that of the latest reservation (zero before any).
	Interval int64
}

// BucketTicket identifies one bucket reservation for an exact give-back.
type BucketTicket struct {
	ID, PrevTop uint64
	PrevTAT     int64
	// Act is when the reserved sends may go.
	Act int64
}

// Next returns when n tokens asked at t may be taken, changing nothing:
// with TAT first restated for interval (see [BucketState.Reserve]) and u =
// max(t, Hold), act = max(u, max(TAT, u) + n x interval - burst x
// interval).
func (s BucketState) Next(t int64, n int, interval time.Duration, burst int) int64 {
	s = s.restate(t, interval, burst)
	u := max(t, s.Hold)
	return max(u, sat.Add(max(s.TAT, u), int64(n-burst)*int64(interval)))
}

// Reserve takes n tokens asked at t. First TAT is restated for interval:
// when it is longer than Interval (a slower rate), the debt ahead of TAT is
// stretched by interval / Interval from ref = max(min(t, e), e - burst x
// Interval), e = TAT - burst x Interval being the instant the bucket was
// last empty: from t if earlier, but from at most two bursts behind TAT.
// This is done when TAT is after t (at TAT <= t the bucket is full:
// nothing changes), so that the wider slack of a slower rate never slots
// new sends among those the old rate reserved (a shorter interval keeps
// TAT). Each change to a slower interval costs up to 2 x burst x the
// difference of the intervals, so Limiters sharing a key at different
// adaptive rates slow each other down. Then act is Next(t, n,
// interval, burst), TAT becomes max(TAT, max(t, Hold)) + n x interval,
// Interval becomes interval, and the reservation, identified by id, becomes
// Top. The ticket's PrevTAT is the restated TAT.
func (s BucketState) Reserve(t int64, n int, interval time.Duration, burst int, id uint64) (BucketState, BucketTicket) {
	s = s.restate(t, interval, burst)
	s.Interval = int64(interval)
	act := s.Next(t, n, interval, burst)
	tk := BucketTicket{ID: id, PrevTop: s.Top, PrevTAT: s.TAT, Act: act}
	s.TAT = sat.Add(max(s.TAT, t, s.Hold), int64(n)*int64(interval))
	s.Top = id
	return s, tk
}

// restate counts the debt ahead of TAT in interval, as Reserve says.
func (s BucketState) restate(t int64, interval time.Duration, burst int) BucketState {
	if s.Interval <= 0 || int64(interval) <= s.Interval || s.TAT <= t {
		return s // the same rate, a faster one, or a full bucket at t
	}
	return s.stretch(t, interval, burst)
}

// stretch is restate's stretch, out of line.
func (s BucketState) stretch(t int64, interval time.Duration, burst int) BucketState {
	slack := int64(math.MaxInt64)
	if burst >= 0 && s.Interval <= math.MaxInt64/int64(max(burst, 1)) {
		slack = int64(burst) * s.Interval
	}
	// From t if earlier than the empty instant, but never from more than
	// two bursts behind TAT: a store meets slower intervals again and again
	// (Limiters sharing a key at different adaptive rates), and stretching
	// a long queue from t each time would grow it geometrically.
	e := sat.Add(s.TAT, -slack)
	ref := max(min(t, e), sat.Add(e, -slack))
	if s.TAT > ref && s.TAT-ref > 0 { // (not if it overflows)
		d := float64(s.TAT-ref) * float64(interval) / float64(s.Interval)
		s.TAT = sat.Add(ref, int64(min(d, 0x1p62)))
	}
	return s
}

// Cancel gives reservation tk back at t: when it is Top and its time had
// not come (t <= tk.Act), TAT returns to tk.PrevTAT and Top to tk.PrevTop,
// and it reports true. Otherwise (a later reservation stands on it, it was
// given back already, its time passed) it changes nothing.
func (s BucketState) Cancel(tk BucketTicket, t int64) (BucketState, bool) {
	if tk.ID == 0 || s.Top != tk.ID || t > tk.Act {
		return s, false
	}
	s.TAT, s.Top = tk.PrevTAT, tk.PrevTop
	return s, true
}

// Extend moves the end of the hold to until unless it ends later.
func (s BucketState) Extend(until int64) BucketState {
	s.Hold = max(s.Hold, until)
	return s
}

// Expired reports whether the state can be forgotten at now: the bucket is
// full again and the hold is over (with a second to spare for instants
// that arrive out of order).
func (s BucketState) Expired(now int64) bool {
	return max(s.TAT, s.Hold) <= now-int64(time.Second)
}

// TierState is a portfolio's counted recipients as a Store keeps it: each
// recipient key with the instant of its latest admitted send. A recipient
// counts while that instant is later than t - window.
type TierState struct {
	Last map[uint64]int64
}

// TierTicket identifies one admission for Release.
type TierTicket struct {
	// To is the recipient key; At the admission's instant.
	To uint64
	At int64
	// New reports whether the admission counted the recipient anew; only
	// such an admission gives a count back.
	New bool
}

// Count returns the recipients counted at t.
func (s TierState) Count(t int64, window time.Duration) int {
	n := 0
	for _, at := range s.Last {
		if at > t-int64(window) {
			n++
		}
	}
	return n
}

// Claim admits recipient to at t: a recipient counted at t is admitted for
// free and its instant becomes max(its instant, t) (New false); otherwise,
// when fewer than limit are counted, it is counted with instant t (New
// true). Otherwise it is refused with retryAt = the oldest counted instant
// + window, which is after t; with a limit of 0 or less, nothing new is
// ever admitted and retryAt is t + window. A refusal changes nothing.
func (s TierState) Claim(to uint64, t int64, limit int, window time.Duration) (tk TierTicket, ok bool, retryAt int64) {
	from := t - int64(window)
	if at, counted := s.Last[to]; counted && at > from {
		s.Last[to] = max(at, t)
		return TierTicket{To: to, At: max(at, t)}, true, 0
	}
	if limit > 0 {
		n, oldest := 0, int64(math.MaxInt64)
		for _, at := range s.Last {
			if at > from {
				n++
				oldest = min(oldest, at)
			}
		}
		if n < limit {
			s.Last[to] = t
			return TierTicket{To: to, At: t, New: true}, true, 0
		}
		return TierTicket{}, false, oldest + int64(window)
	}
	return TierTicket{}, false, sat.Add(t, int64(window))
}

// Release gives back an admission that never went out: when tk counted its
// recipient anew and no later admission renewed it, the recipient is no
// longer counted. A renewal is never given back (the recipient was counted
// already), and a second Release changes nothing.
func (s TierState) Release(tk TierTicket) bool {
	if !tk.New || s.Last[tk.To] != tk.At {
		return false
	}
	delete(s.Last, tk.To)
	return true
}

// memStore is the in-memory bucket state behind a Limiter or Budget with
// no Store: one lock orders and decides every call.
type memBucket struct {
	mu       sync.Mutex // protects the fields below
	s        BucketState
	seq      uint64
	interval time.Duration // the figures of the owner's local decisions
	burst    int
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
func (b *memBucket) reserveLocal(t int64, n int, maxWait time.Duration) (BucketTicket, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.burst {
		return BucketTicket{}, false, ErrBurstTooLarge
	}
	tk, ok := b.reserveLocked(t, n, b.interval, b.burst, maxWait)
	return tk, ok, nil
}

func (b *memBucket) reserve(t int64, n int, interval time.Duration, burst int, maxWait time.Duration) (BucketTicket, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reserveLocked(t, n, interval, burst, maxWait)
}

func (b *memBucket) reserveLocked(t int64, n int, interval time.Duration, burst int, maxWait time.Duration) (BucketTicket, bool) {
	if n > burst || n < 1 {
		return BucketTicket{}, false
	}
	if next := b.s.Next(t, n, interval, burst); next > sat.Add(t, int64(maxWait)) {
		return BucketTicket{Act: next}, false
	}
	b.seq++
	var tk BucketTicket
	b.s, tk = b.s.Reserve(t, n, interval, burst, b.seq)
	return tk, true
}

func (b *memBucket) cancel(t int64, tk BucketTicket) bool {
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
	return b.s.Hold
}

func (b *memBucket) hold() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.s.Hold
}

// MemoryStore is an in-memory [Store]: what a Limiter, Budget or Tier does
// without one, shared by key. Use it to share limits between Limiters in
// one process, and as the reference for other stores. It is safe for
// concurrent use; the zero MemoryStore is ready to use, on the real clock.
//
// A tier's counts are dropped only once expired at the present: the earlier
// of the latest instant asked and the store's clock, so that a claim at a
// future instant never drops a count still live for callers at the present.
type MemoryStore struct {
	clock   clock.Clock
	mu      sync.Mutex // protects the fields below
	buckets map[string]*memBucket
	tiers   map[string]TierState
	asked   int64 // the latest instant a tier was asked at
}

// NewMemoryStore returns an empty MemoryStore. Only [WithClock] applies: the
// clock the store judges the present by (the real one by default).
func NewMemoryStore(opts ...Option) *MemoryStore {
	return &MemoryStore{clock: buildOptions(opts).clock}
}

func (m *MemoryStore) bucket(key string) *memBucket {
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
func (m *MemoryStore) Reserve(_ context.Context, key string, t time.Time, n int, interval time.Duration, burst int, maxWait time.Duration) (BucketTicket, bool, error) {
	tk, ok := m.bucket(key).reserve(t.UnixNano(), n, interval, burst, maxWait)
	return tk, ok, nil
}

// Cancel implements [Store]; it never fails.
func (m *MemoryStore) Cancel(_ context.Context, key string, t time.Time, tk BucketTicket) (bool, error) {
	return m.bucket(key).cancel(t.UnixNano(), tk), nil
}

// Hold implements [Store]; it never fails.
func (m *MemoryStore) Hold(_ context.Context, key string, until time.Time) (time.Time, error) {
	return time.Unix(0, m.bucket(key).extend(until.UnixNano())), nil
}

// tier returns the TierState of key, dropping counts expired at the
// present: the earlier of the latest instant asked (t or before) and the
// clock. Called with m.mu held.
func (m *MemoryStore) tier(key string, t int64, window time.Duration) TierState {
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
func (m *MemoryStore) Claim(_ context.Context, key string, to uint64, t time.Time, limit int, window time.Duration) (TierTicket, bool, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tk, ok, retryAt := m.tier(key, t.UnixNano(), window).Claim(to, t.UnixNano(), limit, window)
	if ok {
		return tk, true, time.Time{}, nil
	}
	return tk, false, time.Unix(0, retryAt), nil
}

// Release implements [Store]; it never fails.
func (m *MemoryStore) Release(_ context.Context, key string, tk TierTicket) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.tiers[key]
	return ok && s.Release(tk), nil
}

// Count implements [Store]; it never fails.
func (m *MemoryStore) Count(_ context.Context, key string, t time.Time, window time.Duration) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tier(key, t.UnixNano(), window).Count(t.UnixNano(), window), nil
}
