package throughput

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/errcodes"
)

// API call budgets per hour per app per WhatsApp Business Account, as Meta
// documents them for the rate-limited endpoints.
const (
	// BudgetDefault is the hourly budget of an app against a WABA.
	BudgetDefault = 200
	// BudgetActiveWABA is the hourly budget against a WABA with a registered
	// phone number.
	BudgetActiveWABA = 5_000
)

// budgetHolds is the hold after consecutive 4, 80007 or 80008 answers that
// came without a regain time: 1 min, doubling up to an hour.
var budgetHolds = backoff.Exponential{Initial: time.Minute, Factor: 2, Max: time.Hour}

// Budget paces API calls for one app against one WABA: no more than the
// hourly budget in any hour (a bucket of a tenth of it, refilled at nine
// tenths per hour), and nothing while Meta says the budget is spent. It is
// safe for concurrent use.
//
// The zero Budget is ready to use: it paces [BudgetDefault] calls per hour
// on the real clock, as NewBudget(BudgetDefault) does.
type Budget struct {
	once     sync.Once // initialises a zero Budget
	clock    clock.Clock
	opts     options
	b        memBucket
	interval time.Duration
	burst    int

	mu        sync.Mutex // protects the fields below
	refusals  int
	heldUntil int64
}

// NewBudget returns a Budget of callsPerHour ([BudgetDefault],
// [BudgetActiveWABA] or another figure; below 1 means BudgetDefault). Only
// [WithClock] and [WithStore] apply.
func NewBudget(callsPerHour int, opts ...Option) *Budget {
	b := &Budget{}
	b.once.Do(func() { b.setup(callsPerHour, opts) })
	return b
}

func (b *Budget) setup(callsPerHour int, opts []Option) {
	b.opts = buildOptions(opts)
	b.clock = b.opts.clock
	if callsPerHour < 1 {
		callsPerHour = BudgetDefault
	}
	callsPerHour = min(callsPerHour, math.MaxInt32)
	b.burst = max(callsPerHour/10, 1)
	perHour := float64(callsPerHour - b.burst)
	if callsPerHour == 1 {
		perHour = 0.5
	}
	b.interval = intervalOf(perHour / 3600)
}

func (b *Budget) init() { b.once.Do(func() { b.setup(BudgetDefault, nil) }) }

// HeldUntil returns the end of the current hold, or the zero Time if the
// budget was never held.
func (b *Budget) HeldUntil() time.Time {
	b.init()
	b.mu.Lock()
	h := b.heldUntil
	b.mu.Unlock()
	if h == 0 {
		return time.Time{}
	}
	return time.Unix(0, h)
}

// AllowN reports whether n calls may be made at t, and if so records them.
func (b *Budget) AllowN(t time.Time, n int) bool {
	return b.reserve(context.Background(), t, n, 0).ok
}

// ReserveN reserves n calls asked at t and returns when they may be made.
func (b *Budget) ReserveN(t time.Time, n int) Reservation {
	return b.reserve(context.Background(), t, n, InfDuration)
}

func (b *Budget) reserve(ctx context.Context, t time.Time, n int, maxWait time.Duration) Reservation {
	b.init()
	if n < 1 {
		return Reservation{err: ErrInvalidCount}
	}
	return reserveBucket(ctx, &b.b, b.opts, b.clock, t.UnixNano(), n, b.interval, b.burst, maxWait)
}

// WaitN reserves n calls and waits on the budget's clock until they may be
// made, failing at once, reserving nothing, with ErrDeadline if that is
// after ctx's deadline.
func (b *Budget) WaitN(ctx context.Context, n int) error {
	b.init()
	return waitN(ctx, b.clock, n, func(t time.Time, n int, maxWait time.Duration) Reservation {
		return b.reserve(ctx, t, n, maxWait)
	})
}

func (b *Budget) hold(t time.Time, d time.Duration) {
	until := satAdd(t.UnixNano(), int64(d))
	b.mu.Lock()
	b.heldUntil = max(b.heldUntil, until)
	b.mu.Unlock()
	extend(&b.b, b.opts, until)
}

// Observe applies what one response's X-Business-Use-Case-Usage header said
// at t (see [ParseUsage]): when an entry gives a time to regain access, the
// budget is held until then; when an entry is at 100 % with no such time,
// for a minute. It returns the hold applied (zero if none).
func (b *Budget) Observe(t time.Time, usage []Usage) time.Duration {
	var d time.Duration
	for _, u := range usage {
		switch {
		case u.RegainAccess > 0:
			d = max(d, u.RegainAccess)
		case u.MaxPercent() >= 100:
			d = max(d, time.Minute)
		}
	}
	if d > 0 {
		b.init()
		b.hold(t, d)
	}
	return d
}

// Refused records that Meta answered 4, 80007 or 80008 at t and holds the
// budget: 1 min, doubling with each consecutive refusal up to an hour. A
// longer hold from Observe stands. Other codes hold nothing.
func (b *Budget) Refused(t time.Time, code errcodes.Code) time.Duration {
	switch code {
	case errcodes.AppRateLimit, errcodes.WABARateLimit, errcodes.WABAManagementRateLimit:
	default:
		return 0
	}
	b.init()
	b.mu.Lock()
	d := budgetHolds.Delay(b.refusals)
	b.refusals++
	b.mu.Unlock()
	b.hold(t, d)
	return d
}

// Accepted records a call Meta accepted, which resets the count of
// consecutive refusals.
func (b *Budget) Accepted(time.Time) {
	b.init()
	b.mu.Lock()
	b.refusals = 0
	b.mu.Unlock()
}
