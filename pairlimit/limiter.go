package pairlimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/internal/clockwait"
)

// Errors a reservation or a wait can fail with, matchable with errors.Is.
var (
	// ErrBurstTooLarge: n is above the limiter's burst cap, so the messages
	// can never be sent together. Nothing was reserved.
	ErrBurstTooLarge = errors.New("pairlimit: burst exceeds the burst cap")
	// ErrInvalidCount: n is below 1.
	ErrInvalidCount = errors.New("pairlimit: message count must be at least 1")
	// ErrZeroPair: the pair is the zero Pair; build pairs with NewPair.
	ErrZeroPair = errors.New("pairlimit: zero pair")
	// ErrDeadline: the wait would end after the context's deadline. WaitN
	// returns it at once, without waiting, and gives the reservation back.
	ErrDeadline = errors.New("pairlimit: wait would exceed the context deadline")
)

// DefaultMargin is the safety margin a Limiter adds after every burst
// unless told otherwise (see WithMargin): 250 ms, 4 % of one pair's steady
// rate. Meta judges spacing by when requests reach it, not when they leave:
// if one request takes longer in transit than the next, the two arrive closer
// than they were sent, the second joins the first's burst, and the extra
// debt refuses a later message. The margin absorbs a difference in transit
// time of up to 250 ms between consecutive requests to one recipient, well
// above the usual spread of request latency within a region.
const DefaultMargin = 250 * time.Millisecond

// penaltyMemory is how long a pair's count of consecutive 131056 answers is
// kept once its hold has passed with no further send: a pair that stays
// silent this long starts again at 4^0.
const penaltyMemory = 15 * time.Minute

// sweepSlack keeps a state a little after its debt is repaid, so that calls
// whose explicit times arrive slightly out of order still see it.
const sweepSlack = int64(time.Second)

const numShards = 64 // per business number; a power of two

// Option configures a Limiter.
type Option func(*Limiter)

// WithClock makes the Limiter read time from, and wait on, c (the real clock
// by default).
func WithClock(c clock.Clock) Option {
	return func(l *Limiter) {
		if c != nil {
			l.clock = c
		}
	}
}

// WithMargin sets the safety margin added after every burst (default
// [DefaultMargin]). Zero sends exactly as the bare rule allows; a negative
// value means zero.
func WithMargin(d time.Duration) Option {
	return func(l *Limiter) { l.margin = int64(max(d, 0)) }
}

// WithBurstCap lowers the number of messages one reservation may hold
// (default: the policy's Burst). Values above the policy's Burst, or below 1,
// are ignored.
func WithBurstCap(n int) Option {
	return func(l *Limiter) {
		if n >= 1 && n <= l.policy.Burst {
			l.burstCap = n
		}
	}
}

// Limiter paces sends per (business number, recipient) pair so that Meta's
// pair rate limit never refuses them, and holds a pair after Meta answers
// 131056 for it. Pairs are independent: one pair's debt or hold never delays
// another. It is safe for concurrent use by multiple goroutines and starts no
// goroutine of its own.
//
// Memory is spent only on pairs that still owe debt or carry a recent 131056;
// the others are evicted lazily inside the calls.
type Limiter struct {
	policy   Policy
	clock    clock.Clock
	interval int64
	margin   int64
	burstCap int

	mu      sync.Mutex                              // serialises adding a business number to numbers
	numbers atomic.Pointer[map[uint64]*numberTable] // copy on write: read without locking
	last    atomic.Pointer[numberTable]             // the table used last: most senders have one number
}

// numberTable holds the pairs of one business number.
type numberTable struct {
	from   uint64
	shards [numShards]shard
}

type shard struct {
	mu     sync.Mutex
	m      map[uint64]state // recipient -> state; protected by mu
	latest int64            // latest instant seen by a call; protected by mu
	seq    uint32           // last reservation sequence number; protected by mu
	ops    int              // calls since the last sweep; protected by mu
	high   int              // most entries since the map was last rebuilt; protected by mu
	_      [64]byte         // keep shards on separate cache lines
}

// state is one pair's pacing state. It holds no pointer, so a map of
// millions of them costs the garbage collector nothing to scan.
type state struct {
	due   int64  // unix ns: the earliest instant the next burst may start
	seq   uint32 // sequence number of the last reservation, for CancelAt
	fails uint32 // consecutive 131056 answers
}

// New returns a Limiter for policy p (fields left zero stand for Meta's
// values; use [Meta]).
func New(p Policy, opts ...Option) *Limiter {
	p = p.withDefaults()
	l := &Limiter{
		policy:   p,
		clock:    clock.New(),
		interval: int64(p.Interval),
		margin:   int64(DefaultMargin),
		burstCap: p.Burst,
	}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Policy returns the limiter's policy.
func (l *Limiter) Policy() Policy { return l.policy }

// Margin returns the safety margin added after every burst.
func (l *Limiter) Margin() time.Duration { return time.Duration(l.margin) }

// BurstCap returns the most messages one reservation may hold.
func (l *Limiter) BurstCap() int { return l.burstCap }

// decide is the pacing rule, a pure function of one pair's state, the
// instant t and the count n: the burst of n starts at act, when the pair's
// earlier debt is repaid (or at once), and leaves the pair owing n intervals
// plus the margin. A burst is never joined after the fact: several messages
// go together only when asked for together (n > 1), because the debt of an
// accidental burst lands on a later, innocent message.
func (l *Limiter) decide(s state, t int64, n int) (act int64, next state) {
	act = max(t, s.due)
	next = state{due: addSat(act, int64(n)*l.interval+l.margin), seq: s.seq, fails: s.fails}
	return act, next
}

func addSat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func (l *Limiter) check(p Pair, n int) error {
	switch {
	case p.IsZero():
		return ErrZeroPair
	case n < 1:
		return ErrInvalidCount
	case n > l.burstCap:
		return ErrBurstTooLarge
	}
	return nil
}

// table returns the pairs of business number from, creating them once.
func (l *Limiter) table(from uint64) *numberTable {
	if t := l.last.Load(); t != nil && t.from == from {
		return t
	}
	if m := l.numbers.Load(); m != nil {
		if t, ok := (*m)[from]; ok {
			l.last.Store(t)
			return t
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.numbers.Load()
	if old != nil {
		if t, ok := (*old)[from]; ok {
			return t
		}
	}
	m := make(map[uint64]*numberTable)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	t := &numberTable{from: from}
	m[from] = t
	l.numbers.Store(&m)
	return t
}

// lock locks and returns the shard of p, with its map ready.
func (l *Limiter) lock(p Pair) *shard {
	t := l.table(p.from)
	sh := &t.shards[(p.to*0x9E3779B97F4A7C15)>>(64-6)]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[uint64]state)
	}
	return sh
}

// lookup returns the state of recipient to; a pair without state owes
// nothing. Called with sh.mu held.
func (sh *shard) lookup(to uint64) state {
	if s, ok := sh.m[to]; ok {
		return s
	}
	return state{due: math.MinInt64}
}

// put stores s for recipient to and does a share of the lazy eviction.
// Called with sh.mu held.
func (sh *shard) put(to uint64, s state, t int64) {
	sh.m[to] = s
	sh.high = max(sh.high, len(sh.m))
	sh.touch(t)
}

// touch records the instant of a call and sweeps the shard once the calls
// since the last sweep outnumber twice its entries, so that eviction costs
// O(1) amortised per call. Called with sh.mu held.
func (sh *shard) touch(t int64) {
	sh.latest = max(sh.latest, t)
	sh.ops++
	if sh.ops < 2*len(sh.m)+32 {
		return
	}
	sh.ops = 0
	limit := sh.latest - sweepSlack
	for k, s := range sh.m {
		if s.due <= limit && (s.fails == 0 || s.due <= limit-int64(penaltyMemory)) {
			delete(sh.m, k)
		}
	}
	// Go maps do not shrink: rebuild one that has emptied out.
	if len(sh.m) < sh.high/4 {
		m := make(map[uint64]state, len(sh.m))
		for k, s := range sh.m {
			m[k] = s
		}
		sh.m, sh.high = m, len(m)
	}
}

// Len returns the number of pairs the limiter holds state for: those that
// owe debt or were refused recently, plus any not yet evicted.
func (l *Limiter) Len() int {
	m := l.numbers.Load()
	if m == nil {
		return 0
	}
	n := 0
	for _, t := range *m {
		for i := range t.shards {
			sh := &t.shards[i]
			sh.mu.Lock()
			n += len(sh.m)
			sh.mu.Unlock()
		}
	}
	return n
}

// Allow is shorthand for AllowN(clock.Now(), p, 1).
func (l *Limiter) Allow(p Pair) bool { return l.AllowN(l.clock.Now(), p, 1) }

// AllowN reports whether n messages may be sent together to pair p at t,
// and if so records them. Use it to drop or defer a message rather than
// wait.
func (l *Limiter) AllowN(t time.Time, p Pair, n int) bool {
	if l.check(p, n) != nil {
		return false
	}
	tn := t.UnixNano()
	sh := l.lock(p)
	defer sh.mu.Unlock()
	s := sh.lookup(p.to)
	act, next := l.decide(s, tn, n)
	if act != tn {
		sh.touch(tn)
		return false
	}
	sh.seq++
	next.seq = sh.seq
	sh.put(p.to, next, tn)
	return true
}

// Reserve is shorthand for ReserveN(clock.Now(), p, 1).
func (l *Limiter) Reserve(p Pair) Reservation { return l.ReserveN(l.clock.Now(), p, 1) }

// ReserveN reserves n messages sent together (one burst: a multi-bubble
// reply) to pair p, asked at t, and returns when they may go. The
// reservation is recorded at once; give it back with CancelAt if the
// messages will not be sent. A reservation that cannot be honoured (n above
// the burst cap, n < 1, the zero pair) is not OK and changes nothing; its
// Err says why. ReserveN does not allocate.
func (l *Limiter) ReserveN(t time.Time, p Pair, n int) Reservation {
	if err := l.check(p, n); err != nil {
		return Reservation{err: err}
	}
	tn := t.UnixNano()
	sh := l.lock(p)
	prev := sh.lookup(p.to)
	act, next := l.decide(prev, tn, n)
	sh.seq++
	next.seq = sh.seq
	sh.put(p.to, next, tn)
	sh.mu.Unlock()
	return Reservation{
		lim: l, pair: p, ok: true, n: n,
		act: act, seq: next.seq, prevDue: prev.due,
	}
}

// Wait is shorthand for WaitN(ctx, p, 1).
func (l *Limiter) Wait(ctx context.Context, p Pair) error { return l.WaitN(ctx, p, 1) }

// WaitN reserves n messages sent together to pair p and blocks on the
// limiter's clock until they may go, or ctx is done. It fails at once,
// reserving nothing, when n can never fit (ErrBurstTooLarge,
// ErrInvalidCount, ErrZeroPair) or when the wait would end after ctx's
// deadline (ErrDeadline). Cancelled during the wait, it gives the
// reservation back (when no later reservation depends on it) and returns
// ctx's error.
func (l *Limiter) WaitN(ctx context.Context, p Pair, n int) error {
	if err := l.check(p, n); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := l.clock.Now()
	r := l.ReserveN(now, p, n)
	delay := r.DelayFrom(now)
	err := clockwait.Reserved(ctx, l.clock, now, delay, r.CancelAt)
	if errors.Is(err, clockwait.ErrPastDeadline) {
		return fmt.Errorf("pairlimit: %v must wait %v: %w", p, delay, ErrDeadline)
	}
	return err
}

// Refused records that Meta answered 131056 for pair p at t (whoever sent
// the message: another process may share the number). The pair is held for
// backoff.Meta.Delay(X) from t, X counting the pair's consecutive 131056
// answers (1 s, 4 s, 16 s, 64 s, 256 s), unless it already owes longer.
// Other pairs are untouched. It returns the hold applied.
func (l *Limiter) Refused(t time.Time, p Pair) time.Duration {
	if p.IsZero() {
		return 0
	}
	tn := t.UnixNano()
	sh := l.lock(p)
	defer sh.mu.Unlock()
	s := sh.lookup(p.to)
	hold := backoff.Meta.Delay(int(s.fails))
	s.due = max(s.due, addSat(tn, int64(hold)))
	if s.fails < math.MaxUint32 {
		s.fails++
	}
	sh.seq++
	s.seq = sh.seq // a hold invalidates earlier reservations' give-backs
	sh.put(p.to, s, tn)
	return hold
}

// Accepted records that Meta accepted a message for pair p at t, which
// resets the pair's count of consecutive 131056 answers.
func (l *Limiter) Accepted(t time.Time, p Pair) {
	if p.IsZero() {
		return
	}
	tn := t.UnixNano()
	sh := l.lock(p)
	defer sh.mu.Unlock()
	if s, ok := sh.m[p.to]; ok && s.fails != 0 {
		s.fails = 0
		sh.m[p.to] = s
	}
	sh.touch(tn)
}

// Reservation is a limiter's promise that n messages to one pair may be
// sent together at a given instant. It is a small value; copying it is
// cheap, and each reservation should be cancelled at most once.
type Reservation struct {
	lim     *Limiter
	err     error
	pair    Pair
	n       int
	act     int64 // unix ns
	prevDue int64
	seq     uint32
	ok      bool
}

// OK reports whether the limiter can honour the reservation. If not, Err
// says why, and nothing was reserved.
func (r Reservation) OK() bool { return r.ok }

// Err returns nil for an OK reservation and otherwise the reason it is not:
// ErrBurstTooLarge, ErrInvalidCount or ErrZeroPair.
func (r Reservation) Err() error { return r.err }

// TimeToAct returns the instant the messages may be sent. It is the zero
// Time for a reservation that is not OK.
func (r Reservation) TimeToAct() time.Time {
	if !r.ok {
		return time.Time{}
	}
	return time.Unix(0, r.act)
}

// Delay is shorthand for DelayFrom(clock.Now()).
func (r Reservation) Delay() time.Duration {
	if !r.ok {
		return InfDuration
	}
	return r.DelayFrom(r.lim.clock.Now())
}

// InfDuration is the delay of a reservation that is not OK.
const InfDuration = time.Duration(math.MaxInt64)

// DelayFrom returns how long after t the messages may be sent: zero means
// at once. It is InfDuration for a reservation that is not OK.
func (r Reservation) DelayFrom(t time.Time) time.Duration {
	if !r.ok {
		return InfDuration
	}
	return time.Duration(max(r.act-t.UnixNano(), 0))
}

// Cancel is shorthand for CancelAt(clock.Now()).
func (r Reservation) Cancel() {
	if r.ok {
		r.CancelAt(r.lim.clock.Now())
	}
}

// CancelAt tells the limiter, at t, that the reserved messages will not be
// sent. The pair's state is restored as if the reservation had not been made
// when no later reservation or hold depends on it and its time had not come
// by t; otherwise the slot stays spent, which errs on the safe side.
func (r Reservation) CancelAt(t time.Time) {
	if !r.ok || t.UnixNano() > r.act {
		return
	}
	r.giveBack()
}

// Refund gives the reservation back whatever the time, because none of its
// messages counted: Meta refused the first of them (with 131056, 130429 or
// any other error), and a refused send changes nothing at Meta. Like
// CancelAt, it restores nothing when a later reservation or hold depends on
// this one. Call Refused after it to apply a 131056 hold.
func (r Reservation) Refund() {
	if r.ok {
		r.giveBack()
	}
}

func (r Reservation) giveBack() {
	sh := r.lim.lock(r.pair)
	defer sh.mu.Unlock()
	s, ok := sh.m[r.pair.to]
	if !ok || s.seq != r.seq {
		return
	}
	sh.seq++ // a second cancel of the same reservation finds nothing to undo
	s.seq = sh.seq
	s.due = r.prevDue
	sh.m[r.pair.to] = s
}
