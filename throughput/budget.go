package throughput

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/internal/instant"
	"github.com/wapace/wapace/internal/sat"
	"github.com/wapace/wapace/throughput/usage"
)

// budgetDefault is the hourly budget of an app against a WABA, as Meta
// documents it (WhatsApp Business Platform, "Rate limits"); see [Budget].
const budgetDefault = 200

// Budget paces management API calls for one app against one WABA, within
// the call budget Meta documents per hour per app per WhatsApp Business
// Account (WhatsApp Business Platform, "Rate limits") for the management
// endpoints (/<WABA_ID>, its phone_numbers, message_templates,
// subscribed_apps and assigned_users): 200 calls an hour, or 5,000 against
// a WABA with a registered phone number. Sending messages (/messages) does
// not count against it; messages have their own limits ([Limiter],
// [Tier]).
//
// A Budget allows no more
// than the hourly budget in any hour (a bucket of a tenth of it, refilled at
// nine tenths per hour), and nothing while Meta says the budget is spent. It
// is safe for concurrent use.
//
// Do not pace message sends with it: Meta's budget counts management calls
// only. Of its holds, only [Budget.RefusedUntil] (Meta refused a call with
// 4, 613, 80007 or 80008) concerns every call of the app and WABA, messages
// included; a hold from the usage header ([Budget.Observe]) concerns the
// management calls alone.
//
// The zero Budget is ready to use: it paces 200 calls per hour on the real
// clock, as NewBudget(200) does.
type Budget struct {
	once     sync.Once // initialises a zero Budget
	clock    clock.Clock
	opts     options
	err      error // the first invalid option: every decision fails with it
	b        memBucket
	interval time.Duration
	burst    int

	mu           sync.Mutex // protects the fields below
	refusals     int
	heldUntil    int64 // every hold: usage and refusals
	refusedUntil int64 // holds from Hold only
}

// NewBudget returns a Budget of callsPerHour (200, 5,000 or another
// figure; below 1 means 200). [WithClock], [WithStore] and
// [WithBusinessID] apply; another option, or a figure above 2^31-1, makes
// every decision fail with [ErrInvalidOption].
func NewBudget(callsPerHour int, opts ...Option) *Budget {
	b := &Budget{}
	b.once.Do(func() { b.setup(callsPerHour, opts) })
	return b
}

func (b *Budget) setup(callsPerHour int, opts []Option) {
	b.opts = buildOptions("NewBudget", opts)
	b.clock = b.opts.clock
	if callsPerHour > math.MaxInt32 {
		b.opts.invalid("NewBudget(%d): above %d calls an hour", callsPerHour, math.MaxInt32)
	}
	b.err = b.opts.err
	if callsPerHour < 1 || b.err != nil {
		callsPerHour = budgetDefault
	}
	b.burst = max(callsPerHour/10, 1)
	perHour := float64(callsPerHour - b.burst)
	if callsPerHour == 1 {
		perHour = 0.5
	}
	b.interval = intervalOf(perHour / 3600)
	if b.opts.store == nil {
		b.b.sc = instant.Of(b.clock.Now()) // as a Limiter's: see setup there
	}
	b.b.setParams(0, b.interval, b.burst, false)
}

func (b *Budget) init() { b.once.Do(func() { b.setup(budgetDefault, nil) }) }

// HeldUntil returns the end of the current hold of management calls (from
// Observe or Hold), or the zero Time if the budget was never held.
func (b *Budget) HeldUntil() time.Time {
	b.init()
	return b.timeOrZero(b.knownHold())
}

// knownHold returns the latest hold of management calls the Budget knows.
func (b *Budget) knownHold() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.heldUntil
}

// RefusedUntil returns the end of the current hold from [Budget.Hold]
// (Meta refused a call with 4, 613, 80007 or 80008), or the zero Time if
// there was none. It is the only hold of the Budget that concerns message
// sends: a sender holds its messages until then, and ignores HeldUntil.
func (b *Budget) RefusedUntil() time.Time {
	b.init()
	b.mu.Lock()
	h := b.refusedUntil
	b.mu.Unlock()
	return b.timeOrZero(h)
}

// timeOrZero is the instant ns on the budget's scale, or the zero Time
// for 0.
func (b *Budget) timeOrZero(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return b.b.sc.Time(ns)
}

// ReserveN reserves n calls asked at t and returns when they may be made.
func (b *Budget) ReserveN(t time.Time, n int) Reservation {
	return b.reserve(context.Background(), t, n, infDuration)
}

func (b *Budget) reserve(ctx context.Context, t time.Time, n int, maxWait time.Duration) Reservation {
	b.init()
	if b.err != nil {
		return Reservation{err: b.err}
	}
	if n < 1 {
		return Reservation{err: ErrInvalidCount}
	}
	tn := b.b.sc.Nanos(t)
	return reserveBucket(ctx, &b.b, b.opts, b.clock, b.knownHold, tn, n, maxWait)
}

// WaitN reserves n calls and waits on the budget's clock until they may be
// made, failing at once, reserving nothing, with backoff.ErrDeadline if that is
// after ctx's deadline.
func (b *Budget) WaitN(ctx context.Context, n int) error {
	b.init()
	return waitN(ctx, b.clock, n, func(t time.Time, n int, maxWait time.Duration) Reservation {
		return b.reserve(ctx, t, n, maxWait)
	})
}

func (b *Budget) hold(t time.Time, d time.Duration, refused bool) {
	until := sat.Add(b.b.sc.Nanos(t), int64(d))
	b.mu.Lock()
	b.heldUntil = max(b.heldUntil, until)
	if refused {
		b.refusedUntil = max(b.refusedUntil, until)
	}
	b.mu.Unlock()
	extend(&b.b, b.opts, until)
}

// Observe applies what one response's X-Business-Use-Case-Usage header said
// at t (see [usage.Parse]), counting only the entries of type
// [usage.TypeManagement] and, with [WithBusinessID], of the Budget's own
// business object ([usage.Select]): entries of other types (Meta also reports
// "whatsapp" ones) or of other WABAs never hold it. When such an entry gives
// a time to regain access, the budget is held until then; when one is at
// 100 % with no such time, for a minute. It returns the hold applied (zero
// if none). The hold concerns management calls, not message sends (see
// [Budget.RefusedUntil]).
func (b *Budget) Observe(t time.Time, entries []usage.Usage) time.Duration {
	b.init()
	if b.err != nil {
		return 0
	}
	var d time.Duration
	for _, u := range entries {
		if u.Type != usage.TypeManagement || b.opts.business != "" && u.BusinessID != b.opts.business {
			continue
		}
		switch {
		case u.RegainAccess > 0:
			d = max(d, u.RegainAccess)
		case u.MaxPercent() >= 100:
			d = max(d, time.Minute)
		}
	}
	if d > 0 {
		b.hold(t, d, false)
	}
	return d
}

// Hold records that Meta refused a call at t because the call budget is
// spent and holds the budget: first for the first refusal since the last
// [Budget.Accepted], each next one twice the one before, up to limit (first
// every time when limit <= first); errcodes gives the schedule per code. A
// longer hold from Observe stands. A first of zero or less holds nothing,
// and so does a Budget built with an invalid option.
//
// With [WithStore], the holds of Hold and Observe are also kept by the
// Budget itself: one the Store fails to record (neither method has an error
// to report it with) still holds this Budget's calls, though not those of
// other processes sharing the Store.
func (b *Budget) Hold(t time.Time, first, limit time.Duration) time.Duration {
	b.init()
	if first <= 0 || b.err != nil {
		return 0
	}
	b.mu.Lock()
	d := holdAfter(b.refusals, first, limit)
	b.refusals++
	b.mu.Unlock()
	b.hold(t, d, true)
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
