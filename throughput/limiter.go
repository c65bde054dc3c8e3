package throughput

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/internal/instant"
	"github.com/wapace/wapace/internal/sat"
	"github.com/wapace/wapace/internal/slotmoves"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// Meta's documented throughput levels, in messages per second per business
// phone number.
const (
	// Default is every number's throughput until Meta upgrades it.
	Default = 80
	// Upgraded is the throughput after Meta's automatic upgrade.
	Upgraded = 1000
	// Coexistence is the fixed throughput of a number used in both the
	// WhatsApp Business app and the Cloud API.
	Coexistence = 20
)

// Errors a wait can fail with, matchable with errors.Is.
var (
	// ErrBurstTooLarge: n is above the limiter's burst, so the messages can
	// never be admitted together.
	ErrBurstTooLarge = errors.New("throughput: n exceeds the limiter's burst")
	// ErrInvalidCount: n is below 1.
	ErrInvalidCount = errors.New("throughput: count must be at least 1")
	// ErrInvalidOption is matched by the error of every decision of a
	// Limiter, Tier or Budget built with an option or a figure it cannot
	// honour: an option of another constructor (WithHeadroom or
	// WithAdaptiveRate given to NewTier or NewBudget, WithBusinessID to New
	// or NewTier), a headroom outside [0, 0.9], a store without a key, more
	// than 10,000 messages per second, or more than 2^31-1 calls an hour.
	// Such a limit admits nothing, ever, and records no hold, so that a
	// mistake in its configuration is found at its first decision rather
	// than paced around. The error names the option and the value.
	ErrInvalidOption = errors.New("throughput: invalid option")
)

// holdAfter is the hold after n consecutive refusals of a schedule that
// starts at first and doubles up to ceiling (first itself when ceiling <=
// first): the schedule errcodes.Class.HoldAfter gives for a code, passed
// in by the caller (errcodes is the one table of waits).
func holdAfter(n int, first, ceiling time.Duration) time.Duration {
	if first <= 0 {
		return 0
	}
	d := first
	for i := 0; i < n && d < ceiling; i++ {
		d = time.Duration(sat.Add(int64(d), int64(d)))
	}
	if ceiling > first {
		d = min(d, ceiling)
	}
	return d
}

// throttleTail is how long after the end of a 130429 event's hold another
// 130429 still belongs to the event.
const throttleTail = time.Second

// Adaptive rate after 130429: an event that begins within recoverEvery of
// the previous one cuts the rate to 3/4 of its current value (not below a
// tenth of the configured rate); every 10 s without one gives back a tenth
// of the configured rate.
const (
	cutFactor    = 0.75
	minFactor    = 0.1
	recoverStep  = 0.1
	recoverEvery = 10 * time.Second
)

// Option configures a Limiter, a Tier or a Budget. WithClock and WithStore
// apply to all three; the others name the one they apply to. An option
// given to a constructor it does not apply to, or given a value it cannot
// honour, makes every decision fail with an error matching
// [ErrInvalidOption]: nothing is clamped or ignored.
type Option func(*options)

type options struct {
	clock    clock.Clock
	headroom float64
	adaptive bool
	store    throughputstore.Store
	key      string
	business string // WithBusinessID: the Budget's business object
	fixed    bool   // WithHeadroom: a fixed margin, no adaptive one
	movable  bool   // withMovingReservations
	windowed bool   // withWriteWindow
	only     []only // the options given that apply to one constructor
	err      error  // the first invalid option
}

// only records an option that applies to one constructor only.
type only struct {
	name string // "WithHeadroom"
	ctor string // "New"
}

// invalid records the first invalid option.
func (o *options) invalid(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

// buildOptions applies opts for constructor ctor ("New", "NewTier" or
// "NewBudget"), rejecting those of another constructor.
func buildOptions(ctor string, opts []Option) options {
	o := options{clock: clock.New(), adaptive: true}
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	for _, x := range o.only {
		if x.ctor != ctor {
			o.invalid("%s applies to %s only, not to %s", x.name, x.ctor, ctor)
		}
	}
	return o
}

// WithBusinessID names the business object (the WABA ID) a Budget is about:
// [Budget.Observe] then applies only the usage entries of that object, so
// that another WABA's or business's usage never holds it. Without it,
// entries of every object apply. NewBudget only.
func WithBusinessID(id string) Option {
	return func(o *options) {
		o.business = id
		o.only = append(o.only, only{"WithBusinessID", "NewBudget"})
	}
}

// WithClock makes the limiter read time from, and wait on, c (the real clock
// by default).
func WithClock(c clock.Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// WithHeadroom keeps fraction f of the number's throughput free for other
// traffic: Meta counts inbound messages against the same limit. f must be
// in [0, 0.9] ([ErrInvalidOption] otherwise). New only.
//
// Without WithHeadroom the Limiter needs none for jitter: the margin
// follows the lateness its sender observes ([Limiter.ObserveSend],
// [Limiter.Margin]; cloudapi reports every send). WithHeadroom fixes the
// margin instead: the adaptive margin is off, and the tolerance and margin
// are those of a Limiter that observes no lateness (the least tolerance,
// 5 ms or half an interval, with the margin that covers it; with
// [WithStore], from half an interval until the sends observed tell its
// share of the slots), so give a headroom that covers the lateness of your
// senders beyond that as well as any traffic wapace does not see.
func WithHeadroom(f float64) Option {
	return func(o *options) {
		o.only = append(o.only, only{"WithHeadroom", "New"})
		if !(f >= 0 && f <= 0.9) { // NaN too
			o.invalid("WithHeadroom(%v): the fraction must be in [0, 0.9]", f)
			return
		}
		o.headroom = f
		o.fixed = true
	}
}

// withMovingReservations makes SetMPSAt move the reservations still
// waiting (their instant after the change) to the instants the new figure
// gives them, as if they had been made at it: a raise (a throughput
// upgrade) moves them earlier, a cut later, so that windows after the
// change obey the new figure with the queue of waiting sends going at
// once at its pace. Every holder of one of the Limiter's reservations must
// then follow its moves (see internal/slotmoves): one that keeps the
// instant it read first would, after a raise, send at the old instant
// among the sends of the new figure. So it is not exported: cloudapi's
// Clients, which follow every move, turn it on for the limiters they make
// through internal/slotmoves. No effect with WithStore (Limiters sharing a
// Store keep the instants they handed out). New only.
func withMovingReservations() Option {
	return func(o *options) {
		o.movable = true
		o.only = append(o.only, only{"moving reservations", "New"})
	}
}

func init() {
	slotmoves.Option = withMovingReservations
	slotmoves.Moved = Reservation.moved
}

// WithAdaptiveRate switches the rate cut after a 130429 on or off (on by
// default). New only.
func WithAdaptiveRate(on bool) Option {
	return func(o *options) {
		o.adaptive = on
		o.only = append(o.only, only{"WithAdaptiveRate", "New"})
	}
}

// maxMPS is the largest throughput a Limiter accepts, ten times Meta's
// highest documented figure (1,000 messages per second), so that an absurd
// rate such as math.MaxInt neither overflows nor admits without limit:
// New and SetMPSAt reject figures above it ([ErrInvalidOption]).
const maxMPS = 10_000

// Limiter admits sends for one business phone number. It guarantees that in
// every closed window of one second no more than PerSecond() sends are
// admitted, while the sustained rate is at least 95 % of it (for rates of 20
// and up; 98.75 % at 80, and 98.5 % at 1,000, where the bucket's 99 % is
// stretched by the 5 ms margin of the least tolerance until lateness
// raises it: see [Limiter.Margin]). It is safe for concurrent use and
// starts no goroutine.
//
// The admission is a token bucket, decided in one critical section that
// orders the instants it is asked at (or in one Store decision, see
// [WithStore]): its burst b and rate r are chosen so that b + r <=
// PerSecond(), since a bucket whose burst equals its rate admits almost
// twice the rate within one second.
//
// The zero Limiter is ready to use: it admits [Default] messages per second
// on the real clock, as New(Default) does.
type Limiter struct {
	once     sync.Once // initialises a zero Limiter
	clock    clock.Clock
	opts     options
	err      error       // the first invalid option: every decision fails with it
	b        memBucket   // the bucket when opts.store is nil
	win      *window     // the window of writes (withWriteWindow, no store), or nil
	degraded atomic.Bool // the adaptive rate is below the configured one

	// Read on every send (reserve, the sender's write-time check, and
	// ObserveSend): kept before the lateness ring, near the bucket, so
	// that a Client with a Limiter per number finds them in cache.
	tolerance atomic.Int64
	cover     atomic.Int64 // the lateness the margin covers: half an interval + margin * share
	lastSlot  atomic.Int64 // the latest instant a reservation was handed out for

	mu            sync.Mutex // protects the fields below
	perSecond     int
	factor        float64   // fraction of perSecond in use
	lastChange    time.Time // of factor
	throttles     int       // consecutive 130429 answers
	maintenance   int       // consecutive 131057 or 2494100 answers
	interval      time.Duration
	interval0     time.Duration // the interval without the margin
	burst         int
	heldUntil     int64 // the latest hold known, for HeldUntil
	eventEnd      int64 // the end of the hold of the current 130429 event
	lastEvent     int64 // when the latest 130429 event began
	margin        time.Duration
	share         float64       // of the bucket's slots, when margin was applied (see ObserveSend)
	looseTolAt    int64         // when a pending higher tolerance may apply (0: none)
	looseTol      time.Duration // the highest it may then be
	looseMarginAt int64         // when a pending lower margin may apply (0: none)
	move          bool          // applyLocked moves the reservations waiting (SetMPSAt)
	late          lateness      // recent lateness, see ObserveSend (8 KiB: last)
}

// New returns a Limiter for a number allowed mps messages per second
// ([Default], [Upgraded], [Coexistence], or another figure). An mps below 1
// means Default; one above 10,000 (ten times Meta's highest figure) makes
// every decision fail with [ErrInvalidOption], as an invalid option does.
func New(mps int, opts ...Option) *Limiter {
	l := &Limiter{}
	l.once.Do(func() { l.setup(mps, opts) })
	return l
}

func (l *Limiter) setup(mps int, opts []Option) {
	l.opts = buildOptions("New", opts)
	l.clock = l.opts.clock
	l.factor = 1
	if mps > maxMPS {
		l.opts.invalid("New(%d): above %d messages per second", mps, maxMPS)
	}
	l.err = l.opts.err
	if l.err != nil {
		mps = Default // sane figures behind decisions that all fail
	}
	if l.opts.store == nil {
		// In this process alone: the monotonic clock's instants, which a
		// step of the wall clock does not move (internal/instant). A
		// Store's are the wall clock's, the one clock processes share.
		l.b.sc = instant.Of(l.clock.Now())
	}
	if l.opts.windowed && l.opts.store == nil {
		l.win = &window{sc: l.b.sc}
	}
	l.setLocked(0, mps)
}

func (l *Limiter) init() { l.once.Do(func() { l.setup(Default, nil) }) }

// split returns the bucket's burst and rate for c admissions per second:
// a burst of 1 % of c (at least 1) and a rate of c minus the burst, so that
// a campaign runs at 99 % of the figure (98.75 % at 80, 95 % at 20).
func split(c int, factor float64) (burst int, perSec float64) {
	burst = max(c/100, 1)
	perSec = float64(c-burst) * factor
	if c == 1 {
		perSec = 0.5 * factor // b + r must stay within 1: admit one per 2 s
	}
	return burst, perSec
}

// intervalOf returns the bucket's interval for perSec tokens a second,
// rounded down to the nanosecond: at the rates a Limiter accepts (up to
// maxMPS) the excess is below one token in any second, so a one-second
// window never admits more than burst + perSec.
func intervalOf(perSec float64) time.Duration {
	if perSec <= 0 {
		return time.Duration(math.MaxInt64 / 4)
	}
	return max(time.Duration(float64(time.Second)/perSec), 1)
}

// setLocked applies mps (1 to maxMPS, or below 1 for Default) at t.
// Called with l.mu held, or before l is shared.
func (l *Limiter) setLocked(t int64, mps int) {
	if mps < 1 {
		mps = Default
	}
	was := l.perSecond
	defer func() {
		if l.opts.store != nil && l.perSecond < was {
			l.b.cut() // the Store keeps the slots it handed out: see stale
		}
	}()
	l.perSecond = max(int(float64(mps)*(1-l.opts.headroom)), 1)
	if l.win != nil {
		l.win.setLimit(l.perSecond)
	}
	l.move = l.opts.movable && l.opts.store == nil
	l.applyLocked(t)
	l.move = false
}

func (l *Limiter) applyLocked(t int64) {
	b, r := split(l.perSecond, l.factor)
	l.interval0 = intervalOf(r)
	if l.late.n == 0 {
		// No lateness seen yet (with WithHeadroom, never: the figures
		// do not follow lateness): the least tolerance, and the margin
		// that covers it (see figures). With a Store, half an interval
		// and no margin: the margin a tolerance needs depends on the
		// share of the slots this Limiter takes, which only its samples
		// tell.
		tol := l.interval0 / 2
		if l.opts.store == nil {
			tol = max(tol, minTolerance)
			l.margin = roundMargin(tol - l.interval0/2)
		}
		if l.win != nil {
			// The window of writes keeps every second within the
			// figure, however late the writes: no stretch.
			l.margin = 0
		}
		l.tolerance.Store(int64(tol))
		l.share = 1
	}
	l.cover.Store(int64(l.interval0/2 + time.Duration(float64(l.margin)*l.share)))
	r /= 1 + l.margin.Seconds()
	l.burst, l.interval = b, intervalOf(r)
	gen := l.b.gen.Load()
	l.b.setParams(t, l.interval, l.burst, l.move)
	if l.b.gen.Load() != gen {
		// The slots handed out moved: so did the latest (see retune).
		l.lastSlot.Store(l.b.movedTicket(throughputstore.BucketTicket{Act: l.lastSlot.Load()}, gen).Act)
	}
	l.degraded.Store(l.factor < 1)
}

// SetMPSAt changes the number's throughput at t, for example after Meta's
// upgrade to 1,000 messages per second (an mps below 1 means [Default]).
// Windows that start a second or more after t obey the new figure. Sends
// reserved before t keep their instants: lowering the figure does not move
// sends already queued at the old rate (cancel them to reschedule), and
// raising it schedules new sends after them. (The limiters of a cloudapi
// Client, whose sends follow their slots, move the slots still waiting at
// t to the instants the new figure gives them instead: earlier for a
// raise, later for a cut. TimeToAct then reads the moved instant.)
//
// Limiters sharing a Store (WithStore) cannot move a slot: the Store
// keeps the instants it handed out. A cut instead makes every reservation
// the Limiter handed out before it stale: WaitN, and a cloudapi Client's
// sends, give a stale slot back and reserve again at the new figure,
// behind the slots already handed out (which pass unused); a ReserveN
// caller should reserve again after a cut too. A process that is not told
// keeps the slots it holds, at the old pace, until its queue drains:
// change the figure in every process sharing the number. (Two processes
// with 2,000 sends queued at 1,000 msg/s, both cut to 80, let 901 go in a
// second when slots kept their instants; at most 80 now, from a second
// after the cut.)
//
// A figure above 10,000 changes nothing and returns an error matching
// [ErrInvalidOption]; so does a Limiter built with an invalid option.
func (l *Limiter) SetMPSAt(t time.Time, mps int) error {
	l.init()
	if l.err != nil {
		return l.err
	}
	if mps > maxMPS {
		return fmt.Errorf("%w SetMPSAt(%d): above %d messages per second", ErrInvalidOption, mps, maxMPS)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(l.b.sc.Nanos(t), mps)
	return nil
}

// PerSecond returns the most sends admitted in any one-second window: the
// number's throughput (New, SetMPSAt) less the headroom.
func (l *Limiter) PerSecond() int {
	l.init()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.perSecond
}

// Burst returns the most messages one reservation may hold.
func (l *Limiter) Burst() int {
	l.init()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.burst
}

// HeldUntil returns the instant a hold after 130429 or 131057 ends, or the
// zero Time when the number was never held. With a Store, it is the latest
// hold this Limiter applied or met.
func (l *Limiter) HeldUntil() time.Time {
	l.init()
	var h int64
	if l.opts.store == nil {
		h = l.b.hold()
	} else {
		h = l.knownHold()
	}
	if h == 0 {
		return time.Time{}
	}
	return l.b.sc.Time(h)
}

// recover lets an adaptively lowered rate recover by t.
func (l *Limiter) recover(t int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	steps := int(l.b.sc.Time(t).Sub(l.lastChange) / recoverEvery)
	if steps > 0 && l.factor < 1 {
		l.factor = min(1, l.factor+float64(steps)*recoverStep)
		l.lastChange = l.lastChange.Add(time.Duration(steps) * recoverEvery)
		l.applyLocked(t)
	}
}

// AllowN reports whether n sends may be admitted at t, and if so records
// them, in one decision.
func (l *Limiter) AllowN(t time.Time, n int) bool {
	return l.reserve(context.Background(), t, n, 0).ok
}

// Allow is shorthand for AllowN(clock.Now(), 1).
func (l *Limiter) Allow() bool {
	l.init()
	return l.AllowN(l.clock.Now(), 1)
}

// ReserveN reserves n sends asked at t and returns when they may go. During
// a hold they are scheduled after it. A reservation of more than Burst(),
// or of n < 1, is not OK and changes nothing; so is one the Store failed to
// decide (its Err matches ErrStore). Instants may arrive in any order: the
// decision is taken under one lock (or in one Store call).
func (l *Limiter) ReserveN(t time.Time, n int) Reservation {
	return l.reserve(context.Background(), t, n, infDuration)
}

func (l *Limiter) reserve(ctx context.Context, t time.Time, n int, maxWait time.Duration) Reservation {
	l.init()
	if n < 1 || l.err != nil {
		if l.err != nil {
			return Reservation{err: l.err}
		}
		return Reservation{err: ErrInvalidCount}
	}
	tn := l.b.sc.Nanos(t)
	if l.degraded.Load() {
		l.recover(tn)
	}
	r := reserveBucket(ctx, &l.b, l.opts, l.clock, l.knownHold, tn, n, maxWait)
	if r.ok && !l.opts.fixed {
		for last := l.lastSlot.Load(); r.tk.Act > last && !l.lastSlot.CompareAndSwap(last, r.tk.Act); last = l.lastSlot.Load() {
		}
	}
	return r
}

// knownHold returns the latest hold this Limiter applied or met.
func (l *Limiter) knownHold() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.heldUntil
}

// afterHold moves a reservation asked at t with maxWait to the end of a
// locally kept hold h (one the store may have failed to record). It reports
// false when the hold alone outlasts maxWait.
func afterHold(h, t int64, maxWait time.Duration) (int64, time.Duration, bool) {
	if h <= t {
		return t, maxWait, true
	}
	if maxWait != infDuration {
		if time.Duration(h-t) > maxWait {
			return t, maxWait, false
		}
		maxWait -= time.Duration(h - t)
	}
	return h, maxWait, true
}

// reserveBucket is the one decision of a Limiter or a Budget, with the
// figures b holds. With a store, held reads the latest hold the caller
// knows of, one the store may have failed to record: the reservation is
// asked from its end.
func reserveBucket(ctx context.Context, b *memBucket, o options, c clock.Clock, held func() int64, t int64, n int, maxWait time.Duration) Reservation {
	var (
		tk  throughputstore.BucketTicket
		ok  bool
		err error
	)
	var gen, cut uint64 // b's moves (no store) or cuts (a store) when asked
	if o.store == nil {
		tk, gen, ok, err = b.reserveLocal(t, n, maxWait)
		if err != nil {
			return Reservation{err: err}
		}
	} else {
		h := held()
		if t, maxWait, ok = afterHold(h, t, maxWait); !ok {
			return Reservation{err: errTooLate, b: b, tk: throughputstore.BucketTicket{Act: h}}
		}
		cut = b.cuts.Load() // before the decision: a cut during it makes it stale
		b.mu.Lock()
		interval, burst := b.interval, b.burst
		b.mu.Unlock()
		if n > burst {
			return Reservation{err: ErrBurstTooLarge}
		}
		tk, ok, err = o.store.Reserve(ctx, o.key, time.Unix(0, t), n, interval, burst, maxWait)
		if err != nil {
			return Reservation{err: &storeError{Op: "reserve", Err: err}}
		}
	}
	if !ok {
		return Reservation{err: errTooLate, b: b, tk: throughputstore.BucketTicket{Act: tk.Act}}
	}
	return Reservation{ok: true, b: b, store: o.store, key: o.key, clock: c, tk: tk, at: t, gen: gen, cut: cut, movable: o.movable && o.store == nil}
}

// errTooLate: the reservation would start after its maximum wait.
var errTooLate = errors.New("throughput: would wait longer than allowed")

// Reserve is shorthand for ReserveN(clock.Now(), 1).
func (l *Limiter) Reserve() Reservation {
	l.init()
	return l.ReserveN(l.clock.Now(), 1)
}

// WaitN reserves n sends and blocks on the limiter's clock until they may
// go, or ctx is done. It fails at once, reserving nothing, with
// ErrBurstTooLarge or ErrInvalidCount, with backoff.ErrDeadline when the wait would
// end after ctx's deadline, or with an error matching ErrStore; cancelled during the wait
// it gives the reservation back and returns ctx's error.
func (l *Limiter) WaitN(ctx context.Context, n int) error {
	l.init()
	return waitN(ctx, l.clock, n, func(t time.Time, n int, maxWait time.Duration) Reservation {
		return l.reserve(ctx, t, n, maxWait)
	})
}

// Wait is shorthand for WaitN(ctx, 1).
func (l *Limiter) Wait(ctx context.Context) error { return l.WaitN(ctx, 1) }

// Throttled records that Meta refused a send from this number at t because
// its throughput was exceeded (130429), and returns the hold of the whole
// number from t. first and limit are the hold's schedule (for 130429,
// errcodes gives 1 s doubling up to 30 s): Meta counts a number's messages
// in one-second windows and asks the sender to wait "until you are within
// your allowed level again". Refusals that arrive during the hold of an
// earlier one, or within a second after it, are one event (requests on the
// way together, or met at the hold's end): they change nothing and return
// what remains of that hold, at least one interval. A new event holds the
// number for first, doubling with each event not separated from the
// previous one by an [Limiter.Accepted], up to limit. The rate stays as it
// was, unless the event began within 10 s of the previous one (refusals
// keep coming despite pacing: the number's capacity is shared with traffic
// the limiter does not see, such as inbound messages): then, with the
// adaptive rate on (the default), the rate is cut to 3/4 (not below a tenth
// of the configured rate), and every 10 s without an event gives back a
// tenth of it. Only this number is affected. With a Store whose hold fails,
// the hold is kept locally only. A first of zero or less holds nothing,
// and so does a Limiter built with an invalid option.
func (l *Limiter) Throttled(t time.Time, first, limit time.Duration) time.Duration {
	l.init()
	if first <= 0 || l.err != nil {
		return 0
	}
	tn := l.b.sc.Nanos(t)
	l.mu.Lock()
	if tn < sat.Add(l.eventEnd, int64(throttleTail)) {
		// The same event: the rest of its hold, or one interval when the
		// refusal comes just after it (the requests that met the hold's
		// end answered together).
		rest := max(time.Duration(l.eventEnd-tn), l.interval)
		l.mu.Unlock()
		return rest
	}
	hold := holdAfter(l.throttles, first, limit)
	l.throttles++
	if l.opts.adaptive && l.lastEvent != 0 && tn-l.lastEvent < int64(recoverEvery) {
		l.factor = max(l.factor*cutFactor, minFactor)
		l.lastChange = t
		l.applyLocked(tn)
	}
	l.lastEvent, l.eventEnd = tn, sat.Add(tn, int64(hold))
	return l.holdLocked(tn, hold)
}

// Hold records that Meta refused a send from this number at t with a
// condition that holds the whole number for a while, such as maintenance
// (131057 during a throughput upgrade, 2494100), and returns the hold from
// t: first for the first such refusal since the last [Limiter.Accepted],
// each next one twice the one before, up to limit (first every time when
// limit <= first). errcodes gives the schedule per code (131057: 10 s doubling up
// to a minute, so that an upgrade of about a minute is polled within it;
// 2494100: 2 min). Only this number is affected. A first of zero or less
// holds nothing, and so does a Limiter built with an invalid option.
func (l *Limiter) Hold(t time.Time, first, limit time.Duration) time.Duration {
	l.init()
	if first <= 0 || l.err != nil {
		return 0
	}
	tn := l.b.sc.Nanos(t)
	l.mu.Lock()
	hold := holdAfter(l.maintenance, first, limit)
	l.maintenance++
	return l.holdLocked(tn, hold)
}

// holdLocked holds the number for hold from tn, unlocks l.mu and returns
// hold.
func (l *Limiter) holdLocked(tn int64, hold time.Duration) time.Duration {
	until := sat.Add(tn, int64(hold))
	l.heldUntil = max(l.heldUntil, until)
	l.mu.Unlock()
	extend(&l.b, l.opts, until)
	return hold
}

// extend applies a hold until the given instant to the bucket.
func extend(b *memBucket, o options, until int64) {
	if o.store == nil {
		b.extend(until)
		return
	}
	_, _ = o.store.Hold(context.Background(), o.key, time.Unix(0, until))
}

// Accepted records that Meta accepted a send from this number at t, which
// resets the counts of consecutive refusals.
func (l *Limiter) Accepted(time.Time) {
	l.init()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.throttles, l.maintenance = 0, 0
}
