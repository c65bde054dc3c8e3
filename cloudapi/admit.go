package cloudapi

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/clockwait"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/throughput"
)

// admission is what one attempt holds: a slot of the number per message,
// one pair reservation for all of them, and the tier's count.
type admission struct {
	c     *Client
	pair  pairlimit.Pair
	slots []slot
	pr    pairlimit.Reservation // zero for MarkRead
	tier  bool                  // the tier counted the recipient for this attempt
}

// slot is one admitted message: when it may go.
type slot struct {
	at  time.Time
	num throughput.Reservation
}

// first is the instant the first message may go.
func (a *admission) first() time.Time { return a.slots[0].at }

// settle gives back, at t, what the attempt's messages did not use: the
// number's slots from index attempted on (never requested), and the pair's
// debt beyond the first counted messages (those Meta accepted or may
// have). With nothing counted, the tier's count is given back too.
func (a *admission) settle(t time.Time, counted, attempted int) {
	for k := attempted; k < len(a.slots); k++ {
		a.slots[k].num.CancelAt(t)
	}
	if a.pr.OK() && counted < len(a.slots) {
		at := a.pr.TimeToAct()
		a.pr.Refund()
		if counted > 0 {
			a.pr = a.c.pairs.ReserveN(at, a.pair, counted)
		}
	}
	if counted == 0 && a.tier {
		a.c.tierGiveBack(t, a.pair)
		a.tier = false
	}
}

// admit reserves, for messages [i, i+n), the number (one slot each), the
// pair (n together) and the tier, at instants that agree, in named steps:
//
//  1. known waits: a retry's least wait, a budget hold, the pair's debt
//     (asked without reserving anything), checked against the deadline and
//     waited out holding nothing;
//  2. the number, asked now: its queue sets a campaign's pace, and a bucket
//     asked at future instants would push every other recipient back;
//  3. the pair, at the number's slot, so that Meta sees the burst start
//     exactly when the pair limiter said; if another send to the same user
//     came in between, everything is given back and step 1 waits for it;
//  4. the deadline: a slot past it gives everything back and fails with a
//     *BackpressureError;
//  5. the tier, for business-initiated templates; a full tier waits
//     (step 1) until its oldest count expires, or fails when that is past
//     the deadline.
func (s *sending) admit(i, n int, notBefore time.Time) (*admission, error) {
	c := s.c
	start := c.clock.Now()
	window := c.pairs.Policy().BurstWindow
	for {
		now := c.clock.Now()
		// 1. Known waits.
		if at, hold := s.knownWait(now, n, notBefore); at.After(now) {
			if err := s.late(at, start, hold); err != nil {
				return nil, err
			}
			if err := clockwait.Until(s.ctx, c.clock, at); err != nil {
				return nil, &SendError{State: StateNotSubmitted, IdempotencyKey: s.keys[i], Attempts: s.attempts[i], Err: err}
			}
			continue
		}
		// 2. The number, now.
		a := &admission{c: c, pair: s.pair, slots: make([]slot, n)}
		num := c.Number(s.from)
		for k := range a.slots {
			a.slots[k].num = num.ReserveN(now, 1)
			a.slots[k].at = a.slots[k].num.TimeToAct()
		}
		first, last := a.first(), a.slots[n-1].at
		// 3. The pair, at the number's slot.
		if !s.pair.IsZero() {
			if last.Sub(first) >= window {
				a.settle(now, 0, 0)
				return nil, fmt.Errorf("cloudapi: %d bubbles take %v at the number's throughput, not within the pair's %v burst window: %w",
					n, last.Sub(first), window, pairlimit.ErrBurstTooLarge)
			}
			a.pr = c.pairs.ReserveN(first, s.pair, n)
			if ap := a.pr.TimeToAct(); ap.After(first) {
				a.settle(now, 0, 0) // another send to this user came in between
				continue
			}
		}
		// 4. The deadline.
		if err := s.late(last, start, errcodes.HoldPhoneNumber); err != nil {
			a.settle(now, 0, 0)
			return nil, err
		}
		// 5. The tier.
		if c.tier != nil && s.countsTowardTier(i, n) {
			ok, retryAt := c.tier.Admit(first, s.pair.To())
			if !ok {
				a.settle(now, 0, 0)
				if retryAt.IsZero() || (!s.deadline.IsZero() && retryAt.After(s.deadline)) {
					return nil, s.backpressure(errcodes.HoldTier, retryAt.Sub(start))
				}
				notBefore = retryAt
				continue
			}
			a.tier = true
		}
		return a, nil
	}
}

// knownWait returns the earliest instant messages could be admitted that is
// known without reserving anything, and the limit that sets it.
func (s *sending) knownWait(now time.Time, n int, notBefore time.Time) (time.Time, errcodes.Hold) {
	c := s.c
	at, hold := notBefore, errcodes.HoldPair
	if s.last != 0 {
		hold = errcodes.Lookup(s.last).Hold
	}
	if h := c.budget.HeldUntil(); h.After(at) {
		at, hold = h, errcodes.HoldApp
		if s.last != 0 && errcodes.Lookup(s.last).Hold == errcodes.HoldWABA {
			hold = errcodes.HoldWABA
		}
	}
	if !s.pair.IsZero() && !at.After(now) {
		if ready := c.pairReadyAt(now, s.pair, n); ready.After(now) {
			at, hold = ready, errcodes.HoldPair
		}
	}
	return at, hold
}

// countsTowardTier reports whether one of messages [i, i+n) is
// business-initiated in the sense of messaging tiers.
func (s *sending) countsTowardTier(i, n int) bool {
	for _, m := range s.msgs[i : i+n] {
		if m.countsTowardTier() {
			return true
		}
	}
	return false
}

// late returns a *BackpressureError when a message going at `at` misses the
// deadline, naming the limit that set `at`.
func (s *sending) late(at, start time.Time, hold errcodes.Hold) error {
	if s.deadline.IsZero() || !at.After(s.deadline) {
		return nil
	}
	if s.pair.IsZero() && hold == errcodes.HoldPair {
		hold = errcodes.HoldPhoneNumber
	}
	return s.backpressure(hold, at.Sub(start))
}

func (s *sending) backpressure(hold errcodes.Hold, wait time.Duration) error {
	return &BackpressureError{Limit: hold, Code: standsFor(hold, s.last), Wait: wait, ExpiresAt: s.deadline, IdempotencyKey: s.keys[0]}
}

// pairReadyAt returns when n messages to p could go, asked at now, without
// reserving anything.
// TODO(cores): use pairlimit's read-only query once it lands; until then
// this probes with a reservation given back at once.
func (c *Client) pairReadyAt(now time.Time, p pairlimit.Pair, n int) time.Time {
	r := c.pairs.ReserveN(now, p, n)
	defer r.CancelAt(now)
	return r.TimeToAct()
}

// tierGiveBack gives back the tier's count of p's recipient at t, for a
// message that was never sent.
// TODO(cores): call the Tier's give-back once it lands.
func (c *Client) tierGiveBack(t time.Time, p pairlimit.Pair) {}
