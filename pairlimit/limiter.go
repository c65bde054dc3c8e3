package pairlimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/internal/clockwait"
	"github.com/wapace/wapace/internal/instant"
	"github.com/wapace/wapace/internal/sat"
	"github.com/wapace/wapace/pairlimit/pairstore"
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
	// ErrInvalidOption is matched by the error of every decision of a
	// Limiter built with an option it cannot honour (WithMargin below 0,
	// WithBurstCap outside 1 to the policy's Burst): such a Limiter
	// reserves nothing, ever, so that a mistake in its configuration is
	// found at its first decision rather than paced around. The error names
	// the option and the value.
	ErrInvalidOption = errors.New("pairlimit: invalid option")
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

// metaHolds is backoff.Meta's schedule as the table a Store takes.
var metaHolds = func() []time.Duration {
	h := make([]time.Duration, 5)
	for i := range h {
		h[i] = backoff.Meta.Delay(i)
	}
	return h
}()

// Option configures a Limiter. An option given a value it cannot honour
// makes every decision of the Limiter fail with an error matching
// [ErrInvalidOption]; nothing is clamped or ignored.
type Option func(*Limiter)

// invalid records the first invalid option of l.
func (l *Limiter) invalid(format string, args ...any) {
	if l.err == nil {
		l.err = fmt.Errorf("%w "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

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
// margin is invalid ([ErrInvalidOption]).
func WithMargin(d time.Duration) Option {
	return func(l *Limiter) {
		if d < 0 {
			l.invalid("WithMargin(%v): the margin must not be negative", d)
			return
		}
		l.margin = int64(d)
	}
}

// WithBurstCap lowers the number of messages one reservation may hold
// (default: the policy's Burst). A cap below 1 or above the policy's Burst
// is invalid ([ErrInvalidOption]).
func WithBurstCap(n int) Option {
	return func(l *Limiter) {
		if n < 1 || n > l.policy.Burst {
			l.invalid("WithBurstCap(%d): the cap must be 1 to the policy's Burst, %d", n, l.policy.Burst)
			return
		}
		l.burstCap = n
	}
}

// Limiter paces sends per (business number, recipient) pair so that Meta's
// pair rate limit never refuses them, and holds a pair after Meta answers
// 131056 for it. Pairs are independent: one pair's debt or hold never delays
// another. It is safe for concurrent use by multiple goroutines and starts no
// goroutine of its own.
//
// The state lives in a [pairstore.Store]: by default a memory store ([NewMemoryStore]) of the
// limiter's own, which spends memory only on pairs that still owe debt or
// were refused recently; [WithStore] shares it.
//
// The zero Limiter is ready to use: it paces with [Meta], [DefaultMargin],
// the real clock and its own memory store, as New(Meta) does.
type Limiter struct {
	policy   Policy
	clock    clock.Clock
	interval int64
	margin   int64
	burstCap int
	store    pairstore.Store // nil: mem
	mem      *memoryStore    // the built-in store, called without an interface
	err      error           // the first invalid option: every decision fails with it

	ready atomic.Bool // set once the fields above are
	once  sync.Mutex  // serialises lazy initialisation of a zero Limiter
}

// New returns a Limiter for policy p (fields left zero stand for Meta's
// values; use [Meta]).
func New(p Policy, opts ...Option) *Limiter {
	l := &Limiter{}
	l.setup(p, opts)
	return l
}

func (l *Limiter) setup(p Policy, opts []Option) {
	p = p.withDefaults()
	l.policy = p
	l.clock = clock.New()
	l.interval = int64(p.Interval)
	l.margin = int64(DefaultMargin)
	l.burstCap = p.Burst
	for _, o := range opts {
		o(l)
	}
	if l.err != nil {
		// No store at all: every decision fails with l.err, and the hot
		// path of ReserveN (which needs mem) is never taken.
		l.store = nil
		l.ready.Store(true)
		return
	}
	if m, ok := l.store.(*memoryStore); ok {
		l.store, l.mem = nil, m
	}
	if l.store == nil && l.mem == nil {
		l.mem = newMemoryStore(l.clock)
	}
	l.ready.Store(true)
}

// scale is how the Limiter turns instants into the nanoseconds of its
// reservations: its memory store's (the monotonic clock's, on the real
// clock), or the wall clock's with another Store.
func (l *Limiter) scale() *instant.Scale {
	if l.mem != nil {
		return &l.mem.sc
	}
	return &wallClock
}

// wallClock is the zero Scale, the wall clock's.
var wallClock instant.Scale

// init makes a zero Limiter usable.
func (l *Limiter) init() {
	if l.ready.Load() {
		return
	}
	l.once.Lock()
	defer l.once.Unlock()
	if !l.ready.Load() {
		l.setup(Meta, nil)
	}
}

// Policy returns the limiter's policy.
func (l *Limiter) Policy() Policy { l.init(); return l.policy }

// Margin returns the safety margin added after every burst.
func (l *Limiter) Margin() time.Duration { l.init(); return time.Duration(l.margin) }

// BurstCap returns the most messages one reservation may hold.
func (l *Limiter) BurstCap() int { l.init(); return l.burstCap }

func (l *Limiter) check(p Pair, n int) error {
	l.init()
	switch {
	case l.err != nil:
		return l.err
	case p.IsZero():
		return ErrZeroPair
	case n < 1:
		return ErrInvalidCount
	case n > l.burstCap:
		return ErrBurstTooLarge
	}
	return nil
}

// cost is the debt of a burst of n: n intervals plus the margin,
// saturating at the largest Duration (n >= 1 and the interval is positive).
func (l *Limiter) cost(n int) time.Duration {
	hi, lo := bits.Mul64(uint64(n), uint64(l.interval))
	if hi != 0 || lo > math.MaxInt64 {
		return InfDuration
	}
	return time.Duration(sat.Add(int64(lo), l.margin))
}

// len returns the number of pairs the limiter's own memory store holds
// state for: those that owe debt or were refused recently, plus any not yet
// evicted. It is 0 with a store given by WithStore, other than a
// *memoryStore.
func (l *Limiter) len() int {
	l.init()
	if l.mem == nil {
		return 0
	}
	return l.mem.Len()
}

// ReadyAt returns the instant n messages sent together to pair p could
// start if reserved at t, in the manner of [rate.Limiter.TokensAt]: it
// reads and changes nothing, so several callers may ask, and only a
// reservation claims the slot. The error is ErrBurstTooLarge,
// ErrInvalidCount or ErrZeroPair for an n or a pair no reservation can
// hold, or an error matching ErrStore.
func (l *Limiter) ReadyAt(t time.Time, p Pair, n int) (time.Time, error) {
	if err := l.check(p, n); err != nil {
		return time.Time{}, err
	}
	if l.mem != nil {
		return l.mem.sc.Time(l.mem.next(p, l.mem.sc.Nanos(t))), nil
	}
	at, err := l.store.Next(context.Background(), p, t)
	if err != nil {
		return time.Time{}, &storeError{Op: "next", Err: err}
	}
	return at, nil
}

// Allow is shorthand for AllowN(clock.Now(), p, 1).
func (l *Limiter) Allow(p Pair) bool {
	l.init()
	return l.AllowN(l.clock.Now(), p, 1)
}

// AllowN reports whether n messages may be sent together to pair p at t,
// and if so records them, in one decision. Use it to drop or defer a
// message rather than wait. A store error reports false.
func (l *Limiter) AllowN(t time.Time, p Pair, n int) bool {
	r := l.reserve(context.Background(), t, p, n, 0)
	return r.ok
}

// Reserve is shorthand for ReserveN(clock.Now(), p, 1).
func (l *Limiter) Reserve(p Pair) Reservation {
	l.init()
	return l.ReserveN(l.clock.Now(), p, 1)
}

// ReserveN reserves n messages sent together (one burst: a multi-bubble
// reply) to pair p, asked at t, and returns when they may go. The
// reservation is recorded at once; give it back with CancelAt if the
// messages will not be sent. A reservation that cannot be honoured (n above
// the burst cap, n < 1, the zero pair, a store that failed) is not OK and
// reserved nothing; its Err says why. With the default store ReserveN does
// not allocate.
func (l *Limiter) ReserveN(t time.Time, p Pair, n int) (r Reservation) {
	// ready first: the fields it publishes are read only after it.
	if !l.ready.Load() || l.mem == nil || n < 1 || n > l.burstCap || p.from == 0 || p.to == 0 {
		return l.reserve(context.Background(), t, p, n, InfDuration)
	}
	m := l.mem
	// The hot path, the built-in store's Reserve written out here so that
	// a call costs one function call: a pair held in the shard's table of
	// its number (first or last used), whose Due fits its slot before and
	// after. Anything else takes reserveLocked, the general path. It
	// applies State.Reserve exactly, as the general path does.
	at, cost := m.sc.Nanos(t), l.cost(n)
	h := m.hash(p.from, p.to)
	sh := &m.shards[h>>(64-shardBits)]
	hb := h << shardBits
	if !sh.mu.TryLock() {
		return l.reserveWaiting(sh, p, n, hb, at, cost) // no call is left on the hot path
	}
	tb := &sh.own
	if tb.from != p.from {
		tb = sh.last
	}
	if tb != nil && tb.from == p.from && len(tb.slots) != 0 {
		size := uint64(len(tb.slots))
		i, _ := bits.Mul64(hb, size)
		for i < size { // always: it tells the compiler so
			s := &tb.slots[i]
			if s.key != p.to {
				if s.key == 0 {
					break // not held: the general path adds it
				}
				if i++; i == size {
					i = 0
				}
				continue
			}
			w := s.w
			d := w & dueMask
			if d == dueFar {
				break // the Due is in the side map
			}
			due := tb.epoch + int64(d)
			if d == 0 {
				due = math.MinInt64 // owes nothing
			}
			act := max(at, due)
			end := sat.Add(act, int64(cost))
			off := uint64(end) - uint64(tb.epoch)
			if end <= tb.epoch || off >= dueFar {
				break // the new Due does not fit the slot
			}
			id := m.nextID(sh)
			s.w = id<<dueBits | off
			// The result is written before any call (the sweep, a woken
			// waiter), so that nothing else must live across them.
			r = Reservation{lim: l, pair: p, ok: true, n: n,
				tk: pairstore.Ticket{ID: id, PrevTop: w >> dueBits, PrevDue: due, Act: act, End: end}}
			if d == 0 {
				tb.wrote(end) // a Due rises from nothing: the sweep must know
			}
			m.saw(sh, at)
			if sh.ops++; sh.ops%sweepEvery == 0 {
				m.sweepStep(sh, tb, at)
			}
			sh.mu.Unlock()
			return r
		}
	}
	tk, _ := m.reserveLocked(sh, p.from, p.to, hb, at, cost, InfDuration)
	return Reservation{lim: l, pair: p, ok: true, n: n, tk: tk}
}

// reserveWaiting is ReserveN's hot path when the shard's lock is taken:
// it waits for the lock and takes the general path.
func (l *Limiter) reserveWaiting(sh *memShard, p Pair, n int, hb uint64, at int64, cost time.Duration) Reservation {
	sh.mu.Lock()
	tk, _ := l.mem.reserveLocked(sh, p.from, p.to, hb, at, cost, InfDuration)
	return Reservation{lim: l, pair: p, ok: true, n: n, tk: tk}
}

func (l *Limiter) reserve(ctx context.Context, t time.Time, p Pair, n int, maxWait time.Duration) Reservation {
	if err := l.check(p, n); err != nil {
		return Reservation{err: err}
	}
	var (
		tk  pairstore.Ticket
		ok  bool
		err error
	)
	if l.mem != nil {
		tk, ok = l.mem.reserve(p, l.mem.sc.Nanos(t), l.cost(n), maxWait)
	} else {
		tk, ok, err = l.store.Reserve(ctx, p, t, l.cost(n), maxWait)
		if err != nil {
			return Reservation{err: &storeError{Op: "reserve", Err: err}}
		}
	}
	if !ok {
		return Reservation{err: errTooLate, tk: pairstore.Ticket{Act: tk.Act}}
	}
	return Reservation{lim: l, pair: p, ok: true, n: n, tk: tk}
}

// errTooLate: the reservation would start after its maximum wait.
var errTooLate = errors.New("pairlimit: would wait longer than allowed")

// Wait is shorthand for WaitN(ctx, p, 1).
func (l *Limiter) Wait(ctx context.Context, p Pair) error { return l.WaitN(ctx, p, 1) }

// WaitN reserves n messages sent together to pair p and blocks on the
// limiter's clock until they may go, or ctx is done. It fails at once,
// reserving nothing, when n can never fit (ErrBurstTooLarge,
// ErrInvalidCount, ErrZeroPair), when the wait would end after ctx's
// deadline (backoff.ErrDeadline) or when the store fails (ErrStore). Cancelled
// during the wait, it gives the reservation back (see CancelAt) and returns
// ctx's error.
func (l *Limiter) WaitN(ctx context.Context, p Pair, n int) error {
	if err := l.check(p, n); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := l.clock.Now()
	maxWait := InfDuration
	if d, ok := ctx.Deadline(); ok {
		maxWait = max(d.Sub(now), 0)
	}
	r := l.reserve(ctx, now, p, n, maxWait)
	if r.err == errTooLate {
		return fmt.Errorf("pairlimit: %v must wait %v: %w", p, time.Duration(r.tk.Act-l.scale().Nanos(now)), backoff.ErrDeadline)
	}
	if r.err != nil {
		return r.err
	}
	delay := r.DelayFrom(now)
	err := clockwait.Reserved(ctx, l.clock, now, delay, r.CancelAt)
	if errors.Is(err, clockwait.ErrPastDeadline) {
		return fmt.Errorf("pairlimit: %v must wait %v: %w", p, delay, backoff.ErrDeadline)
	}
	return err
}

// Refused records that Meta answered 131056 for pair p at t (whoever sent
// the message: another process may share the number). The pair is held for
// backoff.Meta.Delay(X) from t, X counting the pair's consecutive 131056
// answers (1 s, 4 s, 16 s, 64 s, 256 s), unless it already owes longer.
// Other pairs are untouched. It returns the hold applied: 0 for the zero
// pair, for a limiter built with an invalid option (see
// [ErrInvalidOption]), or when the store could not record the hold (a
// later send to the pair then meets Meta's own refusal again, and is
// held then).
func (l *Limiter) Refused(t time.Time, p Pair) time.Duration {
	l.init()
	if p.IsZero() || l.err != nil {
		return 0
	}
	if l.mem != nil {
		return l.mem.refuse(p, l.mem.sc.Nanos(t), metaHolds)
	}
	d, err := l.store.Refuse(context.Background(), p, t, metaHolds, failMemory)
	if err != nil {
		return 0
	}
	return d
}

// Accepted records that Meta accepted a message for pair p at t, which
// resets the pair's count of consecutive 131056 answers.
func (l *Limiter) Accepted(t time.Time, p Pair) {
	l.init()
	if p.IsZero() || l.err != nil {
		return
	}
	if l.mem != nil {
		l.mem.accept(p, l.mem.sc.Nanos(t))
		return
	}
	_ = l.store.Accept(context.Background(), p, t) // a lost reset only keeps holds longer
}

// Reservation is a limiter's promise that n messages to one pair may be
// sent together at a given instant. It is a small value; copying it is
// cheap, and cancelling it twice is harmless. The zero Reservation is not
// OK.
type Reservation struct {
	lim  *Limiter
	err  error
	pair Pair
	n    int
	tk   pairstore.Ticket
	ok   bool
}

// OK reports whether the limiter can honour the reservation. If not, Err
// says why, and nothing was reserved.
func (r Reservation) OK() bool { return r.ok }

// Err returns nil for an OK reservation and otherwise the reason it is not:
// ErrBurstTooLarge, ErrInvalidCount, ErrZeroPair, or an error matching ErrStore matching
// ErrStore (nothing was reserved: do not send).
func (r Reservation) Err() error { return r.err }

// TimeToAct returns the instant the messages may be sent. It is the zero
// Time for a reservation that is not OK. With its own memory store (or
// one from NewMemoryStore) on the real clock, it carries a monotonic
// reading, as time.Now's do: the store keeps its instants on the
// monotonic clock, which a step of the system's wall clock does not move
// (compare instants with Equal, Before and After, not ==). With another
// Store they are the wall clock's, the one clock processes share.
func (r Reservation) TimeToAct() time.Time {
	if !r.ok {
		return time.Time{}
	}
	return r.lim.scale().Time(r.tk.Act)
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
	return time.Duration(max(r.tk.Act-r.lim.scale().Nanos(t), 0))
}

// Cancel is shorthand for CancelAt(clock.Now()).
func (r Reservation) Cancel() {
	if r.ok {
		r.CancelAt(r.lim.clock.Now())
	}
}

// CancelAt tells the limiter, at t, that the reserved messages will not be
// sent, and gives back exactly this reservation's debt ([pairstore.State.Cancel]):
// when its time had not come by t and no later reservation of the pair is
// still standing on top of it, the pair owes again what it owed before it
// (never less than a 131056 hold applied since). When a later reservation
// acts after this one's debt, that slot is spent, which errs on the safe
// side. Cancelling twice, or a reservation that is not OK, changes nothing.
func (r Reservation) CancelAt(t time.Time) {
	if r.ok {
		r.cancel(r.lim.scale().Nanos(t))
	}
}

// Refund gives the reservation back whatever the time, because none of its
// messages counted: Meta refused the first of them (with 131056, 130429 or
// any other error), and a refused send changes nothing at Meta. Like
// CancelAt, it restores nothing when a later reservation stands on this
// one. Call Refused after it to apply a 131056 hold.
func (r Reservation) Refund() { r.cancel(math.MinInt64) }

func (r Reservation) cancel(t int64) bool {
	if !r.ok {
		return false
	}
	if r.lim.mem != nil {
		return r.lim.mem.cancel(r.pair, t, r.tk)
	}
	ok, err := r.lim.store.Cancel(context.Background(), r.pair, time.Unix(0, t), r.tk)
	return ok && err == nil
}
