package throughput

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"pgregory.net/rapid"

	"github.com/wapace/wapace/internal/sat"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// refTier is the Tier's local bookkeeping as it was before its queue
// marked superseded admissions and its map dropped expired recipients
// lazily (a map lookup per expiring recipient, in the queue's order): the
// model the property test below holds the Tier to, quirks included (a count
// expires when the queue's head passes it). Its queue is kept in time order
// (an admission at an earlier instant goes before later ones, after those at
// the same instant), and a give-back takes its admission out.
type refTier struct {
	clock clock.Clock
	limit int
	last  map[uint64]int64
	queue []tierEntry
	head  int
	asked int64
	clk   int64
}

func (t *refTier) current(e tierEntry) bool {
	at, ok := t.last[e.to]
	return ok && at == e.at
}

func (t *refTier) claim(n int64, key uint64) (throughputstore.TierTicket, bool, int64) {
	if t.limit == Unlimited {
		return throughputstore.TierTicket{}, true, 0
	}
	gone := t.expireAt(n)
	if prev, counted := t.last[key]; counted && prev > n-int64(tierWindow) {
		if n > prev {
			t.last[key] = n
			t.insert(tierEntry{key, n})
		}
		return throughputstore.TierTicket{To: key, At: max(prev, n)}, true, 0
	}
	if t.limit == 0 {
		return throughputstore.TierTicket{}, false, sat.Add(n, int64(tierWindow))
	}
	if len(t.last)-gone >= t.limit {
		return throughputstore.TierTicket{}, false, max(t.oldestAfter(n-int64(tierWindow))+int64(tierWindow), n+1)
	}
	t.last[key] = n
	t.insert(tierEntry{key, n})
	return throughputstore.TierTicket{To: key, At: n, New: true}, true, 0
}

// insert puts e after every queued admission at or before its instant.
func (t *refTier) insert(e tierEntry) {
	i := len(t.queue)
	for i > t.head && t.queue[i-1].at > e.at {
		i--
	}
	t.queue = slices.Insert(t.queue, i, e)
}

func (t *refTier) release(tk throughputstore.TierTicket) {
	if at, ok := t.last[tk.To]; ok && at == tk.At {
		delete(t.last, tk.To)
		// The give-back takes its admission out of the queue.
		i := slices.Index(t.queue[t.head:], tierEntry{tk.To, tk.At}) + t.head
		t.queue = slices.Delete(t.queue, i, i+1)
	}
}

func (t *refTier) count(n int64) int {
	if t.limit == Unlimited {
		return 0
	}
	gone := t.expireAt(n) // first: it drops the counts expired at the present
	return len(t.last) - gone
}

func (t *refTier) expireAt(n int64) int {
	t.asked = max(t.asked, n)
	if n > t.clk {
		t.clk = t.clock.Now().UnixNano()
	}
	present := min(t.asked, t.clk)
	limit := present - int64(tierWindow)
	for t.head < len(t.queue) && t.queue[t.head].at <= limit {
		if e := t.queue[t.head]; t.current(e) {
			delete(t.last, e.to)
		}
		t.head++
	}
	if n <= present {
		return 0
	}
	gone, limit := 0, n-int64(tierWindow)
	for i := t.head; i < len(t.queue) && t.queue[i].at <= limit; i++ {
		if t.current(t.queue[i]) {
			gone++
		}
	}
	return gone
}

func (t *refTier) oldestAfter(from int64) int64 {
	for t.head < len(t.queue) && !t.current(t.queue[t.head]) {
		t.head++
	}
	for _, e := range t.queue[t.head:] {
		if e.at > from && t.current(e) {
			return e.at
		}
	}
	return from + 1
}

// TestPropertyTierMatchesModel: whatever the sequence of claims (at past,
// present and future instants, to recipients new and counted), releases,
// limit changes, counts and clock moves, the Tier decides exactly as the
// model: the same admissions, tickets, retry instants and counts. Few
// recipients and small limits make renewals, releases, refusals and the
// queue's compactions common.
func TestPropertyTierMatchesModel(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		clk := &setClock{Clock: clock.NewMock(), now: time.Unix(1_790_000_000, 0)}
		limit := rapid.IntRange(-1, 6).Draw(t, "limit")
		tier := NewTier(limit, WithClock(clk))
		ref := &refTier{clock: clk, limit: max(limit, Unlimited), last: map[uint64]int64{}}
		type claimed struct {
			c  Claim
			tk throughputstore.TierTicket
		}
		var claims []claimed
		now := clk.now
		for step := range rapid.IntRange(1, 300).Draw(t, "steps") {
			if rapid.Bool().Draw(t, "move") {
				now = now.Add(time.Duration(rapid.Int64Range(0, int64(6*time.Hour)).Draw(t, "advance")))
			}
			if rapid.IntRange(0, 3).Draw(t, "clock") == 0 {
				clk.now = now
			}
			at := now.Add(time.Duration(rapid.Int64Range(-int64(30*time.Hour), int64(30*time.Hour)).Draw(t, "offset")))
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3, 4, 5:
				key := uint64(2376_9000_0000 + rapid.IntRange(0, 12).Draw(t, "to"))
				c := tier.Claim(at, fmt.Sprint(key))
				tk, ok, retry := ref.claim(at.UnixNano(), key)
				if c.ok != ok || (ok && c.tk != tk) || (!ok && c.retryAt.UnixNano() != retry) {
					t.Fatalf("step %d: Claim(%v, %d) = ok %v %+v retry %v; model ok %v %+v retry %v",
						step, at, key, c.ok, c.tk, c.retryAt, ok, tk, time.Unix(0, retry))
				}
				if ok && limit != Unlimited {
					claims = append(claims, claimed{c, tk})
				}
			case 6:
				if len(claims) > 0 {
					k := claims[rapid.IntRange(0, len(claims)-1).Draw(t, "release")]
					k.c.Release()
					if k.tk.New {
						ref.release(k.tk)
					}
				}
			case 7:
				l := rapid.IntRange(-1, 6).Draw(t, "new limit")
				if limit != Unlimited && l != Unlimited {
					tier.SetLimit(l)
					ref.limit = l
				}
			default:
				if got, want := tier.Count(at), ref.count(at.UnixNano()); got != want {
					t.Fatalf("step %d: Count(%v) = %d, model %d", step, at, got, want)
				}
			}
		}
	})
}

// setClock is a clock whose Now is set directly.
type setClock struct {
	clock.Clock
	now time.Time
}

func (c *setClock) Now() time.Time { return c.now }

// TestTierRenewalsThroughCompaction: recipients renewed again and again
// leave superseded admissions that the queue compacts away, moving the
// latest ones; gives-back, counts and expiry must still find each
// recipient's latest admission, as in the model.
func TestTierRenewalsThroughCompaction(t *testing.T) {
	t.Parallel()
	clk := &setClock{Clock: clock.NewMock(), now: time.Unix(1_790_000_000, 0)}
	tier := NewTier(4, WithClock(clk))
	ref := &refTier{clock: clk, limit: 4, last: map[uint64]int64{}}
	now := clk.now
	type held struct {
		c  Claim
		tk throughputstore.TierTicket
	}
	var rare []held // claims of recipients seldom renewed, given back later
	for step := range 5000 {
		now = now.Add(time.Second)
		if step%1000 == 999 {
			now = now.Add(20 * time.Hour) // expire some
		}
		clk.now = now
		key := uint64(2376_9000_0001 + step%2) // renewed at every other step
		if step%150 == 0 {
			key = uint64(2376_9000_0010 + step%7) // seldom
		}
		c := tier.Claim(now, fmt.Sprint(key))
		tk, ok, retry := ref.claim(now.UnixNano(), key)
		if c.ok != ok || (ok && c.tk != tk) || (!ok && c.retryAt.UnixNano() != retry) {
			t.Fatalf("step %d: Claim(%d) = ok %v %+v retry %v; model ok %v %+v retry %v",
				step, key, c.ok, c.tk, c.retryAt, ok, tk, time.Unix(0, retry))
		}
		if step%150 == 0 && ok {
			rare = append(rare, held{c, tk})
		}
		if step%150 == 140 && len(rare) > 0 && step%300 != 140 {
			h := rare[len(rare)-1]
			h.c.Release()
			if h.tk.New {
				ref.release(h.tk)
			}
		}
		if got, want := tier.Count(now), ref.count(now.UnixNano()); got != want {
			t.Fatalf("step %d: Count = %d, model %d", step, got, want)
		}
	}
}
