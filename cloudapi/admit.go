package cloudapi

import (
	"errors"
	"fmt"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/clockwait"
	"github.com/wapace/wapace/internal/pairkey"
	"github.com/wapace/wapace/internal/phone"
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
	tier  *throughput.Claim     // the tier's count of the recipient, if claimed
}

// slot is one admitted message: when it may go.
type slot struct {
	at  time.Time
	num throughput.Reservation
	// window: when the number's window of writes has room for it, where
	// the write-time check found it full (zero otherwise): the send
	// waits for it as for its slot (see pace.go).
	window time.Time
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
		// Give the reservation back exactly, then reserve again the
		// bubbles that count, at the same instant: the pair owes for them
		// alone.
		at := a.pr.TimeToAct()
		a.pr.Refund()
		a.pr = pairlimit.Reservation{}
		if counted > 0 {
			a.pr = a.c.pairs.ReserveN(at, a.pair, counted)
		}
	}
	if counted == 0 && a.tier != nil {
		a.tier.Release() // gives back only a recipient this claim counted anew
		a.tier = nil
	}
}

// waitSlot waits for message k's slot of a (and, for the first bubble,
// the pair's reservation), following the slot's moves: SetMPSAt after a
// throughput upgrade moves the number's waiting slots earlier, a cut
// later (see internal/slotmoves). A moved slot's instant is read
// again, and the first bubble's pair reservation is taken again at it. A
// slot moved past the deadline fails with a *BackpressureError.
func (s *sending) waitSlot(a *admission, k int) error {
	for {
		sl := &a.slots[k]
		moved := slotMoved(sl.num) // before the instant: see internal/slotmoves
		if slotStale(sl.num) {
			// A cut of a Store-backed number: the Store keeps the slot
			// at the old figure's pace, so take one at the new figure.
			num := s.c.Number(s.from)
			s.giveBack(a, k)
			if err := s.slotAgain(a, k, num, s.c.clock.Now(), false); err != nil {
				return err
			}
			continue
		}
		if at := sl.num.TimeToAct(); sl.num.OK() && !at.Equal(sl.at) {
			if err := a.moveSlot(k, at); err != nil {
				return err
			}
			if err := s.late(at, s.c.clock.Now(), errcodes.HoldPhoneNumber); err != nil {
				return err
			}
		}
		goAt := maxTime(sl.at, sl.window)
		if k == 0 && a.pr.OK() {
			goAt = maxTime(goAt, a.pr.TimeToAct())
		}
		again, err := clockwait.UntilOr(s.ctx, s.c.clock, goAt, moved)
		if err != nil || !again {
			return err
		}
	}
}

// moveSlot sets message k's slot to at, where SetMPSAt moved it; the first
// bubble takes the pair's reservation again at it.
func (a *admission) moveSlot(k int, at time.Time) error {
	a.slots[k].at = at
	if k != 0 || !a.pr.OK() {
		return nil
	}
	a.pr.Refund()
	a.pr = a.c.pairs.ReserveN(at, a.pair, len(a.slots))
	return a.pr.Err()
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// admit reserves, for messages [i, i+n), the number (one slot each), the
// pair (n together) and the tier, at instants that agree, in named steps:
//
//  1. known waits: a retry's least wait, the number's or the budget's
//     hold, the pair's debt (asked without reserving anything), checked
//     against the deadline and waited out holding nothing;
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
	var tierAt time.Time // a full tier's retry instant, for s.hold
	for {
		now := c.clock.Now()
		// 1. Known waits.
		at, hold, err := s.knownWait(now, n, notBefore)
		if err != nil {
			return nil, s.notSubmitted(i, err)
		}
		if at.After(now) {
			if at.Equal(tierAt) {
				s.hold.note(errcodes.HoldTier, at.Sub(now))
			} else {
				s.hold.note(hold, at.Sub(now))
			}
			if err := s.late(at, start, hold); err != nil {
				return nil, err
			}
			if err := clockwait.Until(s.ctx, c.clock, at); err != nil {
				return nil, s.notSubmitted(i, err)
			}
			continue
		}
		// 2. The number, now.
		a := &admission{c: c, pair: s.pair, slots: make([]slot, n)}
		num := c.Number(s.from)
		for k := range a.slots {
			a.slots[k].num = num.ReserveN(now, 1)
			a.slots[k].at = a.slots[k].num.TimeToAct()
			if !a.slots[k].num.OK() {
				a.settle(now, 0, 0)
				return nil, s.notSubmitted(i, errors.New("cloudapi: the number's throughput limiter refused the reservation"))
			}
		}
		first, last := a.first(), a.slots[n-1].at
		s.hold.admitted = now
		// 3. The pair, at the number's slot.
		if !s.pair.IsZero() {
			if last.Sub(first) >= window {
				a.settle(now, 0, 0)
				return nil, fmt.Errorf("cloudapi: %d bubbles take %v at the number's throughput, not within the pair's %v burst window: %w",
					n, last.Sub(first), window, pairlimit.ErrBurstTooLarge)
			}
			a.pr = c.pairs.ReserveN(first, s.pair, n)
			if !a.pr.OK() { // a store error: nothing reserved
				a.settle(now, 0, 0)
				return nil, s.notSubmitted(i, a.pr.Err())
			}
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
			cl := c.tier.Claim(first, s.to.String()) // the canonical form parses back to s.to
			if err := cl.Err(); err != nil {
				a.settle(now, 0, 0)
				return nil, s.notSubmitted(i, err)
			}
			if !cl.OK() {
				a.settle(now, 0, 0)
				retryAt := cl.RetryAt()
				if retryAt.IsZero() || (!s.deadline.IsZero() && retryAt.After(s.deadline)) {
					return nil, s.backpressure(errcodes.HoldTier, retryAt.Sub(start))
				}
				notBefore, tierAt = retryAt, retryAt
				continue
			}
			a.tier = &cl
		}
		return a, nil
	}
}

// Admission is the Client's read-only answer to "when may these messages
// go, and which limit holds them": see [Client.Admission].
type Admission struct {
	// At is the earliest instant the messages could start that is known
	// without reserving anything: the instant asked when nothing holds
	// them.
	At time.Time
	// Limit is the limit that holds them until At (errcodes.HoldNone when
	// nothing does).
	Limit errcodes.Hold
	// Code is the Meta code that limit stands for: 131056 for the pair,
	// 130429 (or the 131057 or 2494100 that holds it) for the number, 4,
	// 613, 80007 or 80008 for the call budget; 0 when nothing holds.
	Code errcodes.Code
}

// Admission returns when n messages sent together from business number
// from (its phone number ID) to recipient to could start if asked at t,
// and which limit holds them: the pair's debt or 131056 hold, the number's
// hold after 130429, 131057 or 2494100, the call budget's hold after a
// refused call. It reads and changes nothing, so that the Client's own
// sends, an outbox scheduling its lanes and an agent's queue-or-reject ask
// the same question of the same limits. An empty to (a read receipt) asks
// about the number and the budget only. It does not include the number's
// queue of sends already admitted, nor the messaging tier (neither can be
// read without reserving). Errors: a *ValidationError for a bad from, to
// or n; a store error of the pair limiter.
func (c *Client) Admission(t time.Time, from, to string, n int) (Admission, error) {
	fromID, err := phoneID(from)
	if err != nil {
		return Admission{}, err
	}
	if n < 1 {
		return Admission{}, invalid("messages", "count must be at least 1")
	}
	var pair pairlimit.Pair
	if to != "" {
		rcpt, err := phone.ParseTo(to)
		if err != nil {
			return Admission{}, invalid("to", "not a phone number or business-scoped user ID")
		}
		pair = pairOf(fromID, rcpt)
	}
	return c.admission(t, from, pair, n, time.Time{}, 0)
}

// admission is Admission for a parsed pair (zero for none), with a
// retry's least wait notBefore and the code of the refusal it follows
// (last, or 0), which the limit of notBefore stands for.
func (c *Client) admission(t time.Time, from string, pair pairlimit.Pair, n int, notBefore time.Time, last errcodes.Code) (Admission, error) {
	a := Admission{At: t}
	hold := func(at time.Time, h errcodes.Hold, code errcodes.Code) {
		if at.After(a.At) {
			a.At, a.Limit, a.Code = at, h, code
		}
	}
	if last != 0 {
		hold(notBefore, errcodes.Lookup(last).Hold, last)
	} else {
		hold(notBefore, errcodes.HoldPair, errcodes.HoldPair.Code())
	}
	numCode := errcodes.HoldPhoneNumber.Code()
	if code, ok := c.numberHolds.Load(from); ok {
		numCode = code.(errcodes.Code) // the code of the number's latest hold
	}
	hold(c.Number(from).HeldUntil(), errcodes.HoldPhoneNumber, numCode)
	if h := c.budget.RefusedUntil(); h.After(a.At) { // its only hold that concerns sends
		code := errcodes.HoldApp.Code()
		if last != 0 && errcodes.Lookup(last).Hold == errcodes.HoldWABA {
			code = last
		}
		hold(h, code.Class().Hold, code)
	}
	if !pair.IsZero() && !a.At.After(t) {
		ready, err := c.pairs.ReadyAt(t, pair, n)
		if err != nil {
			return a, err
		}
		hold(ready, errcodes.HoldPair, errcodes.HoldPair.Code())
	}
	return a, nil
}

// knownWait returns the earliest instant messages could be admitted that is
// known without reserving anything, and the limit that sets it: the
// Client's one admission query.
func (s *sending) knownWait(now time.Time, n int, notBefore time.Time) (time.Time, errcodes.Hold, error) {
	a, err := s.c.admission(now, s.from, s.pair, n, notBefore, s.last)
	if a.Limit == errcodes.HoldNone {
		a.Limit = errcodes.HoldPair
	}
	return a.At, a.Limit, err
}

// notSubmitted is the error of message i when admission ends before
// anything was sent.
func (s *sending) notSubmitted(i int, err error) error {
	return &SendError{State: StateNotSubmitted, IdempotencyKey: s.keys[i], Attempts: s.attempts[i], Err: err}
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

// pairOf builds the pair of a phone number ID and a recipient already
// parsed, without parsing them again (see internal/pairkey).
var pairOf = pairkey.Of.(func(uint64, phone.Recipient) pairlimit.Pair)
