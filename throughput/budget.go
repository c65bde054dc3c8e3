package throughput

import (
	"context"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/errcodes"
	"golang.org/x/time/rate"
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
type Budget struct {
	lim   *rate.Limiter
	clock clock.Clock
	tl    timeline

	mu       sync.Mutex // protects refusals
	refusals int
}

// NewBudget returns a Budget of callsPerHour ([BudgetDefault],
// [BudgetActiveWABA] or another figure; below 1 means BudgetDefault). Only
// [WithClock] applies.
func NewBudget(callsPerHour int, opts ...Option) *Budget {
	o := buildOptions(opts)
	if callsPerHour < 1 {
		callsPerHour = BudgetDefault
	}
	burst := max(callsPerHour/10, 1)
	perHour := float64(callsPerHour - burst)
	if callsPerHour == 1 {
		perHour = 0.5
	}
	return &Budget{
		lim:   rate.NewLimiter(rate.Limit(perHour/3600), burst),
		clock: o.clock,
	}
}

// HeldUntil returns the end of the current hold, or the zero Time if the
// budget was never held.
func (b *Budget) HeldUntil() time.Time { return b.tl.heldUntil() }

// AllowN reports whether n calls may be made at t, and if so records them.
func (b *Budget) AllowN(t time.Time, n int) bool {
	if b.tl.held(t) {
		return false
	}
	return b.lim.AllowN(b.tl.at(t), n)
}

// ReserveN reserves n calls asked at t and returns when they may be made.
func (b *Budget) ReserveN(t time.Time, n int) Reservation {
	return reserve(b.lim, &b.tl, b.clock, t, n)
}

// WaitN reserves n calls and waits on the budget's clock until they may be
// made, failing at once with ErrDeadline if that is after ctx's deadline.
func (b *Budget) WaitN(ctx context.Context, n int) error {
	return waitN(ctx, b.clock, n, b.ReserveN)
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
		b.tl.extend(t.Add(d))
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
	b.mu.Lock()
	d := budgetHolds.Delay(b.refusals)
	b.refusals++
	b.mu.Unlock()
	b.tl.extend(t.Add(d))
	return d
}

// Accepted records a call Meta accepted, which resets the count of
// consecutive refusals.
func (b *Budget) Accepted(time.Time) {
	b.mu.Lock()
	b.refusals = 0
	b.mu.Unlock()
}
