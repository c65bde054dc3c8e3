package throughput

import (
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/internal/phone"
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

// TierWindow is the length of the moving window a tier counts over.
const TierWindow = 24 * time.Hour

// Tier counts the unique recipients a business portfolio reached in the
// last 24 hours. Share one Tier between all numbers of a portfolio. It is
// safe for concurrent use.
//
// A recipient counts from its latest admitted send until 24 hours after it;
// admitting a recipient already counted is free (and renews its 24 hours).
// Memory is proportional to the recipients in the window.
type Tier struct {
	clock clock.Clock
	limit int

	mu    sync.Mutex       // protects the fields below
	last  map[uint64]int64 // recipient -> unix ns of its latest admitted send
	queue []tierEntry      // admissions in time order; entries superseded by a later send are stale
	head  int              // first live index of queue
	high  int              // most recipients counted since last was rebuilt
}

type tierEntry struct {
	to uint64
	at int64
}

// NewTier returns a Tier admitting limit unique recipients per 24 hours
// ([Tier250] ... [Tier100K], another figure, or [Unlimited]). Only
// [WithClock] applies.
func NewTier(limit int, opts ...Option) *Tier {
	o := buildOptions(opts)
	if limit < 0 {
		limit = Unlimited
	}
	return &Tier{clock: o.clock, limit: limit, last: make(map[uint64]int64)}
}

// Limit returns the tier's limit, or Unlimited.
func (t *Tier) Limit() int { return t.limit }

// Admit reports whether a business-initiated message to recipient may be
// sent at now. A recipient already counted in the window is admitted for
// free. A new recipient beyond the limit is refused, with retryAt the
// instant the oldest count expires; a refusal changes nothing. An invalid
// recipient (see [pairlimit.NewPair] for the accepted forms) is refused
// with a zero retryAt.
func (t *Tier) Admit(now time.Time, recipient string) (ok bool, retryAt time.Time) {
	to, err := phone.ParseRecipient(recipient)
	if err != nil {
		return false, time.Time{}
	}
	if t.limit == Unlimited {
		return true, time.Time{}
	}
	n := now.UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(n)
	if prev, counted := t.last[to]; counted {
		if n > prev {
			t.last[to] = n
			t.push(to, n)
		}
		return true, time.Time{}
	}
	if len(t.last) >= t.limit {
		return false, time.Unix(0, t.oldest()+int64(TierWindow))
	}
	t.last[to] = n
	t.high = max(t.high, len(t.last))
	t.push(to, n)
	return true, time.Time{}
}

// Count returns the unique recipients counted in the window ending at now.
func (t *Tier) Count(now time.Time) int {
	if t.limit == Unlimited {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(now.UnixNano())
	return len(t.last)
}

// push appends an admission, compacting the queue once stale entries
// outnumber live ones. Called with t.mu held.
func (t *Tier) push(to uint64, at int64) {
	if len(t.queue)-t.head > 2*len(t.last)+64 {
		live := t.queue[:0]
		for _, e := range t.queue[t.head:] {
			if t.last[e.to] == e.at {
				live = append(live, e)
			}
		}
		clear(t.queue[len(live):])
		t.queue, t.head = live, 0
	}
	t.queue = append(t.queue, tierEntry{to, at})
}

// expire drops the recipients whose latest send is 24 hours old or more.
// Called with t.mu held.
func (t *Tier) expire(now int64) {
	limit := now - int64(TierWindow)
	for t.head < len(t.queue) && t.queue[t.head].at <= limit {
		e := t.queue[t.head]
		if t.last[e.to] == e.at {
			delete(t.last, e.to)
		}
		t.head++
	}
	// Go maps do not shrink: rebuild one that has emptied out.
	if t.high > 1024 && len(t.last) < t.high/4 {
		m := make(map[uint64]int64, len(t.last))
		for k, v := range t.last {
			m[k] = v
		}
		t.last, t.high = m, len(m)
	}
	if t.head > 1024 && t.head > len(t.queue)/2 {
		n := copy(t.queue, t.queue[t.head:])
		clear(t.queue[n:])
		t.queue, t.head = t.queue[:n], 0
	}
}

// oldest returns the instant of the oldest live count. Called with t.mu
// held and at least one recipient counted.
func (t *Tier) oldest() int64 {
	for t.head < len(t.queue) {
		if e := t.queue[t.head]; t.last[e.to] == e.at {
			return e.at
		}
		t.head++ // stale: a later send superseded it
	}
	return 0 // unreachable while a recipient is counted
}
