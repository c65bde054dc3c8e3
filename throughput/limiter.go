package throughput

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/errcodes"
	"golang.org/x/time/rate"
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
	// ErrDeadline: the wait would end after the context's deadline; nothing
	// was reserved.
	ErrDeadline = errors.New("throughput: wait would exceed the context deadline")
)

// Holds after Meta refuses a send for the whole number.
var (
	// throttleHolds is the hold after consecutive 130429 answers. Meta's
	// window is one second, so the first hold lets it clear; repeated ones
	// mean capacity is taken by traffic wapace does not see.
	throttleHolds = backoff.Exponential{Initial: time.Second, Factor: 2, Max: 30 * time.Second}
	// maintenanceHolds polls a number in maintenance (131057, 2494100):
	// Meta says a throughput upgrade makes it unusable for up to about a
	// minute.
	maintenanceHolds = backoff.Exponential{Initial: 10 * time.Second, Factor: 2, Max: time.Minute}
)

// Adaptive rate after 130429: each answer cuts the rate to 3/4 of its
// current value (not below a tenth of the configured rate); every 10 s
// without one gives back a tenth of the configured rate.
const (
	cutFactor    = 0.75
	minFactor    = 0.1
	recoverStep  = 0.1
	recoverEvery = 10 * time.Second
)

// Option configures a Limiter, a Tier or a Budget.
type Option func(*options)

type options struct {
	clock    clock.Clock
	headroom float64
	adaptive bool
}

func buildOptions(opts []Option) options {
	o := options{clock: clock.New(), adaptive: true}
	for _, f := range opts {
		f(&o)
	}
	return o
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
// traffic: Meta counts inbound messages against the same limit. Values are
// clamped to [0, 0.9]; the default is 0. Limiter only.
func WithHeadroom(f float64) Option {
	return func(o *options) {
		if math.IsNaN(f) {
			f = 0
		}
		o.headroom = min(max(f, 0), 0.9)
	}
}

// WithAdaptiveRate switches the rate cut after a 130429 on or off (on by
// default). Limiter only.
func WithAdaptiveRate(on bool) Option {
	return func(o *options) { o.adaptive = on }
}

// Limiter admits sends for one business phone number. It guarantees that in
// every closed window of one second no more than PerSecond() sends are
// admitted, while the sustained rate is at least 95 % of it (for rates of 20
// and up; 98.75 % at 80 and 99 % at 1,000). It is safe for concurrent use
// and starts no goroutine.
//
// Built on [rate.Limiter] used only through its explicit-time methods: the
// token bucket's burst b and rate r are chosen so that b + r <= PerSecond(),
// since a bucket whose burst equals its rate admits almost twice the rate
// within one second.
type Limiter struct {
	lim   *rate.Limiter
	clock clock.Clock
	opts  options

	tl       timeline     // the hold, and instants in order for lim
	degraded atomic.Bool  // the adaptive rate is below the configured one
	burst    atomic.Int64 // lim's burst, read without taking lim's lock

	mu          sync.Mutex // protects the fields below and changes of lim's rate
	mps         int
	perSecond   int
	factor      float64   // fraction of perSecond in use
	lastChange  time.Time // of factor
	throttles   int       // consecutive 130429 answers
	maintenance int       // consecutive 131057 or 2494100 answers
}

// New returns a Limiter for a number allowed mps messages per second
// ([Default], [Upgraded], [Coexistence], or another figure). An mps below 1
// means Default.
func New(mps int, opts ...Option) *Limiter {
	o := buildOptions(opts)
	l := &Limiter{clock: o.clock, opts: o, factor: 1}
	l.setLocked(time.Time{}, mps)
	return l
}

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

// setLocked applies mps at t. Called with l.mu held, or before l is shared.
func (l *Limiter) setLocked(t time.Time, mps int) {
	if mps < 1 {
		mps = Default
	}
	l.mps = mps
	l.perSecond = max(int(float64(mps)*(1-l.opts.headroom)), 1)
	l.applyLocked(t)
}

func (l *Limiter) applyLocked(t time.Time) {
	b, r := split(l.perSecond, l.factor)
	l.burst.Store(int64(b))
	if t.IsZero() {
		l.lim = rate.NewLimiter(rate.Limit(r), b) // starts with a full bucket
		return
	}
	l.lim.SetLimitAt(t, rate.Limit(r))
	l.lim.SetBurstAt(t, b)
}

// SetMPSAt changes the number's throughput at t, for example after Meta's
// upgrade to 1,000 messages per second. Windows that start a second or more
// after t obey the new figure.
func (l *Limiter) SetMPSAt(t time.Time, mps int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(l.tl.at(t), mps)
}

// MPS returns the number's configured throughput.
func (l *Limiter) MPS() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mps
}

// PerSecond returns the most sends admitted in any one-second window: the
// throughput less the headroom.
func (l *Limiter) PerSecond() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.perSecond
}

// Burst returns the most messages one reservation may hold.
func (l *Limiter) Burst() int { return int(l.burst.Load()) }

// HeldUntil returns the instant a hold after 130429 or 131057 ends, or the
// zero Time when the number is not held.
func (l *Limiter) HeldUntil() time.Time { return l.tl.heldUntil() }

// recoverAt lets an adaptively lowered rate recover by t.
func (l *Limiter) recoverAt(t time.Time) {
	if l.degraded.Load() {
		l.recover(t)
	}
}

func (l *Limiter) recover(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	steps := int(t.Sub(l.lastChange) / recoverEvery)
	if steps <= 0 || l.factor >= 1 {
		return
	}
	l.factor = min(1, l.factor+float64(steps)*recoverStep)
	l.lastChange = l.lastChange.Add(time.Duration(steps) * recoverEvery)
	l.applyLocked(l.tl.at(t))
	l.degraded.Store(l.factor < 1)
}

// AllowN reports whether n sends may be admitted at t, and if so records
// them.
func (l *Limiter) AllowN(t time.Time, n int) bool {
	l.recoverAt(t)
	if l.tl.held(t) || n < 1 || int64(n) > l.burst.Load() {
		return false
	}
	return l.lim.AllowN(l.tl.at(t), n)
}

// Allow is shorthand for AllowN(clock.Now(), 1).
func (l *Limiter) Allow() bool { return l.AllowN(l.clock.Now(), 1) }

// ReserveN reserves n sends asked at t and returns when they may go. During
// a hold they are scheduled after it. A reservation of more than Burst() is
// not OK and changes nothing. Instants earlier than one the limiter has
// already been asked at count as that one (rate.Limiter double-counts
// refill otherwise), so ask at the current time, not ahead of it.
func (l *Limiter) ReserveN(t time.Time, n int) Reservation {
	if n < 1 || int64(n) > l.burst.Load() {
		return Reservation{}
	}
	l.recoverAt(t)
	at := l.tl.at(t)
	r := l.lim.ReserveN(at, n) // inlined: the *rate.Reservation does not escape
	return Reservation{r: *r, ok: r.OK(), tl: &l.tl, clock: l.clock, at: at, delay: r.DelayFrom(at)}
}

// Reserve is shorthand for ReserveN(clock.Now(), 1).
func (l *Limiter) Reserve() Reservation { return l.ReserveN(l.clock.Now(), 1) }

// WaitN reserves n sends and blocks on the limiter's clock until they may
// go, or ctx is done. It fails at once with ErrBurstTooLarge, or with
// ErrDeadline when the wait would end after ctx's deadline; cancelled
// during the wait it gives the reservation back and returns ctx's error.
func (l *Limiter) WaitN(ctx context.Context, n int) error {
	return waitN(ctx, l.clock, n, l.ReserveN)
}

// Wait is shorthand for WaitN(ctx, 1).
func (l *Limiter) Wait(ctx context.Context) error { return l.WaitN(ctx, 1) }

// Refused records that Meta refused a send from this number at t with
// code, and returns the hold applied to the whole number:
//
//   - 130429 (throughput): 1 s, doubling with each consecutive 130429 up to
//     30 s. With the adaptive rate on (the default), each one also cuts the
//     rate to 3/4 (not below a tenth of the configured rate), and every 10 s
//     without one gives back a tenth: a 130429 despite pacing means the
//     number's capacity is shared with traffic the limiter does not see
//     (inbound messages, another process), and sending at the old rate would
//     only meet it again.
//   - 131057 and 2494100 (maintenance, such as a throughput upgrade): 10 s,
//     then 20 s, 40 s, 60 s, ...: the number is polled about once a minute
//     until it answers.
//
// Other codes hold nothing and return 0. Only this number is affected.
func (l *Limiter) Refused(t time.Time, code errcodes.Code) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var hold time.Duration
	switch code {
	case errcodes.ThroughputLimit:
		hold = throttleHolds.Delay(l.throttles)
		l.throttles++
		if l.opts.adaptive {
			l.factor = max(l.factor*cutFactor, minFactor)
			l.lastChange = t
			l.applyLocked(l.tl.at(t))
			l.degraded.Store(true)
		}
	case errcodes.Maintenance, errcodes.MaintenanceMode:
		hold = maintenanceHolds.Delay(l.maintenance)
		l.maintenance++
	default:
		return 0
	}
	l.tl.extend(t.Add(hold))
	return hold
}

// Accepted records that Meta accepted a send from this number at t, which
// resets the counts of consecutive refusals.
func (l *Limiter) Accepted(time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.throttles, l.maintenance = 0, 0
}
