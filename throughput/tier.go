package throughput

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/internal/instant"
	"github.com/wapace/wapace/internal/phone"
	"github.com/wapace/wapace/internal/sat"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// Messaging tier levels: the unique WhatsApp users a business portfolio may
// reach outside a customer service window in a moving 24 hours. Since
// October 2025 the limit belongs to the business portfolio and is shared by
// all its phone numbers.
const (
	Tier250  = 250
	Tier2K   = 2_000
	Tier10K  = 10_000
	Tier100K = 100_000
	// Unlimited admits every recipient and keeps no state.
	Unlimited = -1
)

// tierWindow is the length of the moving window a tier counts over.
const tierWindow = 24 * time.Hour

// Tier counts the unique recipients a business portfolio reached in the
// last 24 hours. Share one Tier between all numbers of a portfolio. It is
// safe for concurrent use.
//
// A recipient counts from its latest admitted send until 24 hours after it;
// admitting a recipient already counted is free (and renews its 24 hours).
// Each decision counts the recipients counted at its own instant. Counts
// are dropped only once expired at the present: the earlier of the latest
// instant asked and the clock ([WithClock]), so that a claim at a future
// instant never drops a count still live for callers at the present.
// Memory is proportional to the recipients in the window ending at the
// present, plus those admitted since. A decision at an instant ahead of the
// clock also walks the counts expired at that instant but not yet at the
// present: pass WithClock when the instants asked are not the clock's
// (a simulation, say), so that the present keeps up with them.
//
// Recipients are counted by key (see pairlimit.Pair): phone numbers and
// short numeric BSUIDs exactly; other BSUIDs by a fixed 61-bit hash, so two
// of them may count as one, with probability about n^2/2^62 among n in the
// window (1e5: 2.2e-9). Such a twin is an undercount of one recipient.
//
// A limit of 0 admits no new recipient (Meta gives a portfolio no
// business-initiated capacity): every refusal's retryAt is 24 hours on, in
// the future, so that a caller waiting on it never spins; raise the limit
// with SetLimit. A negative limit is [Unlimited]. The zero Tier has a limit
// of 0 and the real clock.
type Tier struct {
	clock clock.Clock
	opts  options       // opts.err: the first invalid option; every claim fails with it
	sc    instant.Scale // the instants below: the monotonic clock's on the real clock without a Store (the zero Tier: the wall clock's)

	mu    sync.Mutex  // protects the fields below
	limit int         // set by NewTier or SetLimit
	last  u64map      // recipient -> instant (ns on sc) of its latest admitted send
	queue []tierEntry // admissions in time order; entries superseded by a later send are stale
	head  int         // first live index of queue
	asked int64       // the latest instant asked
	clk   int64       // the clock when last read; never ahead of it
}

type tierEntry struct {
	to uint64
	at int64
}

// NewTier returns a Tier admitting limit unique recipients per 24 hours
// ([Tier250] ... [Tier100K], another figure, 0 for none, or [Unlimited]).
// [WithClock] and [WithStore] apply; another option makes every claim fail
// with [ErrInvalidOption].
func NewTier(limit int, opts ...Option) *Tier {
	o := buildOptions("NewTier", opts)
	t := &Tier{clock: o.clock, opts: o, limit: max(limit, Unlimited)}
	if o.store == nil {
		t.sc = instant.Of(o.clock.Now()) // as a Limiter's: see its setup
	}
	return t
}

// Limit returns the tier's limit, or Unlimited.
func (t *Tier) Limit() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.limit
}

// SetLimit changes the limit, for example when Meta moves the portfolio to
// another tier. Recipients already counted stay counted; a lower limit
// admits no new one until enough expire. A negative limit is Unlimited.
func (t *Tier) SetLimit(limit int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limit = max(limit, Unlimited)
}

// Claim is one admission by a Tier: whether it was admitted, and if not
// when to retry, and a way to give it back. It is a small value; Release
// it at most once (a second Release is harmless).
type Claim struct {
	tier    *Tier
	tk      throughputstore.TierTicket
	ok      bool
	retryAt time.Time
	err     error
}

// OK reports whether the recipient was admitted.
func (c Claim) OK() bool { return c.ok }

// RetryAt returns, for a refusal by the limit, the instant a count frees:
// always after the instant asked. It is the zero Time when admitted, or
// when refused for an invalid recipient or a store error (see Err).
func (c Claim) RetryAt() time.Time { return c.retryAt }

// Err returns why the claim was refused other than by the limit: a
// recipient error (see [pairlimit.NewPair] for the accepted forms), an
// error matching ErrStore, or one matching ErrInvalidOption. It is nil
// otherwise.
func (c Claim) Err() error { return c.err }

// Release gives the admission back because its message never went out
// (cancelled, not submitted, refused): a recipient it counted anew is no
// longer counted, unless a later admission renewed it. An admission of a
// recipient already counted gives nothing back, and neither does a second
// Release.
func (c Claim) Release() {
	if !c.ok || !c.tk.New {
		return
	}
	if c.tier.opts.store != nil {
		_, _ = c.tier.opts.store.Release(context.Background(), c.tier.opts.key, c.tk)
		return
	}
	t := c.tier
	t.mu.Lock()
	defer t.mu.Unlock()
	if at, ok := t.last.get(c.tk.To); ok && at == c.tk.At {
		t.last.del(c.tk.To)
		t.unqueue(tierEntry{c.tk.To, c.tk.At})
	}
}

// unqueue removes admission e from the queue. Left there, stale, it would
// look current again when its recipient is admitted anew at the same
// instant, and a decision at a future instant would count the recipient
// as expired twice. e is found from the tail, where a give-back usually
// finds its admission: the cost is the admissions made since. Called with
// t.mu held.
func (t *Tier) unqueue(e tierEntry) {
	for i := len(t.queue) - 1; i >= t.head; i-- {
		if t.queue[i] == e {
			n := copy(t.queue[i:], t.queue[i+1:])
			t.queue[i+n] = tierEntry{}
			t.queue = t.queue[:i+n]
			return
		}
	}
}

// Admit reports whether a business-initiated message to recipient may be
// sent at now. A recipient already counted in the window is admitted for
// free. A new recipient beyond the limit is refused, with retryAt the
// instant the oldest count expires (after now); a refusal changes nothing.
// An invalid recipient is refused with a zero retryAt. Admit is Claim
// without the give-back.
func (t *Tier) Admit(now time.Time, recipient string) (ok bool, retryAt time.Time) {
	c := t.Claim(now, recipient)
	return c.ok, c.retryAt
}

// Claim admits recipient at now as Admit does, and returns a Claim that can
// give the admission back.
func (t *Tier) Claim(now time.Time, recipient string) Claim {
	if t.opts.err != nil {
		return Claim{err: t.opts.err}
	}
	to, err := phone.ParseTo(recipient)
	if err != nil {
		return Claim{err: fmt.Errorf("throughput: %w", err)}
	}
	return t.claim(now, to)
}

// claim is Claim for a parsed recipient.
func (t *Tier) claim(now time.Time, to phone.Recipient) Claim {
	if to.IsZero() {
		return Claim{err: errors.New("throughput: zero recipient")}
	}
	if t.opts.store != nil {
		limit := t.Limit()
		if limit == Unlimited {
			return Claim{ok: true}
		}
		tk, ok, retryAt, err := t.opts.store.Claim(context.Background(), t.opts.key, to.Key(), now, limit, tierWindow)
		if err != nil {
			return Claim{err: &storeError{Op: "claim", Err: err}}
		}
		if !ok {
			return Claim{retryAt: retryAt}
		}
		return Claim{tier: t, tk: tk, ok: true}
	}
	n := t.sc.Nanos(now)
	key := to.Key()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.limit == Unlimited {
		return Claim{ok: true}
	}
	gone := t.expireAt(n)
	if prev, counted := t.last.get(key); counted && prev > n-int64(tierWindow) {
		if n > prev {
			t.last.set(key, n)
			t.push(key, n)
		}
		return Claim{tier: t, tk: throughputstore.TierTicket{To: key, At: max(prev, n)}, ok: true}
	}
	if t.limit == 0 {
		return Claim{retryAt: t.sc.Time(sat.Add(n, int64(tierWindow)))}
	}
	if t.last.live-gone >= t.limit {
		// The oldest count live at now expires after now, and never at or
		// before it.
		return Claim{retryAt: t.sc.Time(max(t.oldestAfter(n-int64(tierWindow))+int64(tierWindow), n+1))}
	}
	t.last.set(key, n)
	t.push(key, n)
	return Claim{tier: t, tk: throughputstore.TierTicket{To: key, At: n, New: true}, ok: true}
}

// Count returns the unique recipients counted in the window ending at now.
// With a Store whose count fails, it returns 0. An Unlimited tier counts
// nothing and returns 0, and so does a Tier built with an invalid option.
func (t *Tier) Count(now time.Time) int {
	if t.opts.err != nil {
		return 0
	}
	if t.opts.store != nil {
		n, err := t.opts.store.Count(context.Background(), t.opts.key, now, tierWindow)
		if err != nil {
			return 0
		}
		return n
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.limit == Unlimited {
		return 0
	}
	gone := t.expireAt(t.sc.Nanos(now)) // first: it drops the counts expired at the present
	return t.last.live - gone
}

// current reports whether e is its recipient's latest admission.
// Called with t.mu held.
func (t *Tier) current(e tierEntry) bool {
	at, ok := t.last.get(e.to)
	return ok && at == e.at
}

// push adds an admission in time order (after those at the same
// instant), compacting the queue once stale entries outnumber live ones.
// An admission asked at an earlier instant than the latest goes before the
// later ones, so that it expires 24 hours after its own instant: appended
// behind them, it stayed counted until they expired. Called with t.mu held.
func (t *Tier) push(to uint64, at int64) {
	if len(t.queue)-t.head > 2*t.last.live+64 {
		live := t.queue[:0]
		for _, e := range t.queue[t.head:] {
			if t.current(e) {
				live = append(live, e)
			}
		}
		clear(t.queue[len(live):])
		t.queue, t.head = live, 0
	}
	if n := len(t.queue); n == t.head || t.queue[n-1].at <= at {
		t.queue = append(t.queue, tierEntry{to, at}) // the usual case
		return
	}
	live := t.queue[t.head:]
	i, _ := slices.BinarySearchFunc(live, at, func(e tierEntry, at int64) int {
		if e.at <= at {
			return -1
		}
		return 1
	})
	t.queue = slices.Insert(t.queue, t.head+i, tierEntry{to, at})
}

// expireAt drops the recipients expired at the present (see [Tier]) and
// returns how many of those still counted are expired at n, an instant
// later than the present. Called with t.mu held.
func (t *Tier) expireAt(n int64) int {
	t.asked = max(t.asked, n)
	if n > t.clk {
		t.clk = t.clockNow()
	}
	present := min(t.asked, t.clk)
	t.expire(present)
	if n <= present {
		return 0
	}
	// n is ahead of the clock: count, without dropping, the recipients
	// expired at n but live at the present.
	gone, limit := 0, n-int64(tierWindow)
	for i := t.head; i < len(t.queue) && t.queue[i].at <= limit; i++ {
		if t.current(t.queue[i]) {
			gone++
		}
	}
	return gone
}

// clockNow reads the tier's clock: the real one for the zero Tier.
func (t *Tier) clockNow() int64 {
	if t.clock == nil {
		return time.Now().UnixNano()
	}
	return t.sc.Nanos(t.clock.Now())
}

// expire drops the recipients whose latest send is 24 hours old or more.
// Called with t.mu held.
func (t *Tier) expire(now int64) {
	limit := now - int64(tierWindow)
	for t.head < len(t.queue) && t.queue[t.head].at <= limit {
		if e := t.queue[t.head]; t.current(e) {
			t.last.del(e.to)
		}
		t.head++
	}
	if t.head > 1024 && t.head > len(t.queue)/2 {
		n := copy(t.queue, t.queue[t.head:])
		clear(t.queue[n:])
		t.queue, t.head = t.queue[:n], 0
	}
	if t.head == len(t.queue) && cap(t.queue) > 1024 {
		t.queue, t.head = nil, 0 // all expired: free the queue
	}
}

// oldestAfter returns the instant of the oldest count later than from.
// Called with t.mu held and at least one such count.
func (t *Tier) oldestAfter(from int64) int64 {
	for t.head < len(t.queue) {
		if e := t.queue[t.head]; t.current(e) {
			break
		}
		t.head++ // stale: a later send superseded it
	}
	for _, e := range t.queue[t.head:] {
		if e.at > from && t.current(e) {
			return e.at
		}
	}
	return from + 1 // unreachable while such a recipient is counted
}
