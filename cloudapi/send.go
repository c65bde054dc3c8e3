package cloudapi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/phone"
	"github.com/wapace/wapace/internal/writemark"
	"github.com/wapace/wapace/pairlimit"
)

// Result is what Meta answered for an accepted message.
type Result struct {
	// MessageID is the WhatsApp message ID (wamid) Meta assigned.
	MessageID string
	// WaID is the recipient's WhatsApp ID from contacts[].wa_id. Key later
	// sends on it: Meta may rewrite the number you gave (Brazil's ninth
	// digit, for one).
	WaID string
	// UserID is the recipient's business-scoped user ID from
	// contacts[].user_id, when Meta sends one.
	UserID string
	// Input is the recipient as sent (normalised digits, or the BSUID).
	Input string
	// Endpoint is the endpoint that accepted the message: "messages" or
	// "marketing_messages" (the Marketing Messages API). Meta advises
	// keeping, for each message ID, which of the two sent it.
	Endpoint string
	// MessageStatus is messages[].message_status when Meta sends it, such as
	// "accepted" or "held_for_quality_assessment". Accepted is not
	// delivered: delivery is reported by status webhooks.
	MessageStatus string
	// IdempotencyKey is the message's key, sent as biz_opaque_callback_data.
	IdempotencyKey string
	// Attempts is the number of requests made for the message.
	Attempts int
	// SentAt is the instant of the successful attempt.
	SentAt time.Time
}

// Values of Result.MessageStatus.
const (
	// MessageStatusAccepted: Meta accepted the message for delivery.
	MessageStatusAccepted = "accepted"
	// MessageStatusHeld: Meta accepted a marketing template but holds it
	// while it assesses the campaign's quality (business portfolio
	// pacing). It is sent later, or dropped: then a "failed" status
	// webhook with 132015 reports it. Either way the request succeeded and
	// must not be resent.
	MessageStatusHeld = "held_for_quality_assessment"
)

// Held reports whether Meta holds the message for business portfolio
// pacing (MessageStatus held_for_quality_assessment): its outcome comes by
// status webhook.
func (r *Result) Held() bool { return r != nil && r.MessageStatus == MessageStatusHeld }

// Send sends m from business number from (its phone number ID) and returns
// Meta's answer. It is SendBurst with one message.
//
// On the way it validates m (a *ValidationError, nothing spent), refuses a
// key it already sent (ErrDuplicate, no request), reserves the number, the
// pair and, for business-initiated templates, the tier, and gives
// everything back with a *BackpressureError if the message could not go
// before its freshness deadline or ctx's. It then waits on the clock, posts,
// and classifies the answer with CheckResponse and errcodes:
//
//   - a refusal that holds a limit the Client paces (131056 the pair;
//     130429, 131057, 2494100 the number; 4, 613, 80007, 80008 the
//     call budget): the limit is held as Meta prescribes and only this message
//     is retried; other recipients are not slowed. A refusal for a limit no
//     limiter holds (131048, 131064) ends in StateRefused, not retried.
//   - anything that does not prove refusal (a transport failure or a
//     timeout after a byte of the request's body may have left, any 5xx
//     except 2494100, codes 1, 2, 131000, 131016): a *SendError matching
//     ErrSubmittedUnknown, and no resend. A request that ends before its
//     body left (the write-time check still held it) is not submitted.
//   - 134100 or 131055 from /marketing_messages (Meta says the template
//     is not a marketing one, and the 400 proves nothing was sent): the
//     message is sent again, at once and once, to /messages, where its
//     category belongs; the refused attempt is reported to the observer
//     (StateRefused with its Code) and counted in Result.Attempts, and
//     Result.Endpoint says which endpoint took the message.
//   - other errors (131049, request errors, ...): a *SendError in
//     StateFailed wrapping the *errcodes.Error.
//
// Retries stop at the freshness deadline and after WithRetry's attempts.
func (c *Client) Send(ctx context.Context, from string, m Message) (*Result, error) {
	rs, err := c.SendBurst(ctx, from, m)
	if len(rs) == 1 {
		return rs[0], err
	}
	return nil, err
}

// SendBurst sends several bubbles to one recipient as one burst of the pair:
// reserved together, sent back to back in order, and owing len(msgs) x 6 s
// afterwards. It fails at once, sending nothing, if a message is invalid,
// the messages do not all go to the same recipient, or they are more than
// the pair limiter's burst cap (pairlimit.ErrBurstTooLarge). If bubble k is
// refused for a limit, the pair keeps only the debt of the k bubbles Meta
// accepted, bubble k is retried as Send does, and the bubbles after it
// follow it; if it fails otherwise, the bubbles after it are not sent
// (their results are nil) so that the user never sees a reply with a hole
// in it. The results have one entry per message, nil for those not
// accepted.
func (c *Client) SendBurst(ctx context.Context, from string, msgs ...Message) ([]*Result, error) {
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	s, err := c.prepare(ctx, from, msgs)
	if err != nil {
		return nil, err
	}
	// Only the caller's keys are remembered: a generated key is new.
	var given, prints []string
	var at []int // given[j] is the key of msgs[at[j]]
	for i, m := range msgs {
		if m.IdempotencyKey != "" {
			given, at = append(given, s.keys[i]), append(at, i)
			prints = append(prints, fingerprint(s.fromID, s.printBody(i)))
		}
	}
	if j, first, conflicting, ok, full := c.idem.claim(c.clock.Now(), given, prints); full {
		return make([]*Result, len(msgs)), &SendError{State: StateNotSubmitted, IdempotencyKey: given[0], Err: ErrIdempotencyMemoryFull}
	} else if !ok {
		if conflicting {
			return make([]*Result, len(msgs)), conflict(given[j])
		}
		results := make([]*Result, len(msgs))
		var err error
		results[at[j]], err = duplicate(given[j], first)
		return results, err
	}
	if c.hooks != nil {
		s.ctx = c.hooks.SendStart(s.ctx, from, len(msgs))
	}
	err = s.run()
	if c.hooks != nil {
		c.hooks.SendEnd(s.ctx, from, s.states, err)
	}
	s.remember(err)
	return s.results, err
}

// prepare validates the messages, parses the sender and the recipient once,
// encodes every request body and names every message's key: everything
// that can fail on the caller's input fails here, before anything is spent.
func (c *Client) prepare(ctx context.Context, from string, msgs []Message) (*sending, error) {
	if len(msgs) == 0 {
		return nil, invalid("messages", "no message to send")
	}
	fromID, err := phoneID(from)
	if err != nil {
		return nil, err
	}
	s := &sending{c: c, ctx: ctx, from: from, fromID: fromID, msgs: msgs,
		keys: make([]string, len(msgs)), bodies: make([][]byte, len(msgs)), endpoints: make([]string, len(msgs)), misrouted: make([]bool, len(msgs)),
		results: make([]*Result, len(msgs)), attempts: make([]int, len(msgs)), states: make([]SendState, len(msgs))}
	bubble := func(i int, err error) error {
		var ve *ValidationError
		if len(msgs) > 1 && errors.As(err, &ve) {
			return invalid("messages["+strconv.Itoa(i)+"]."+ve.Field, ve.Reason)
		}
		return err
	}
	for i, m := range msgs {
		to, err := m.check()
		if err != nil {
			return nil, bubble(i, err)
		}
		if m.kind == KindRead && len(msgs) > 1 {
			return nil, invalid("messages", "MarkRead cannot be part of a burst")
		}
		if i > 0 && to != s.to {
			return nil, invalid("messages", "a burst goes to one recipient")
		}
		s.to = to
		s.keys[i] = m.IdempotencyKey
		if s.keys[i] == "" {
			s.keys[i] = c.newKey()
		}
		if s.endpoints[i], err = c.endpoint(ctx, m); err != nil {
			return nil, err
		}
		if s.bodies[i], err = m.encodeFor(to, s.keys[i], s.endpoints[i] == endpointMarketing); err != nil {
			return nil, bubble(i, err)
		}
	}
	if !s.to.IsZero() {
		s.pair = pairOf(fromID, s.to)
	}
	if len(msgs) > c.pairs.BurstCap() {
		return nil, fmt.Errorf("cloudapi: %d bubbles: %w", len(msgs), pairlimit.ErrBurstTooLarge)
	}
	s.deadline = deadlineOf(ctx, msgs, c.clock.Now())
	return s, nil
}

// phoneID parses a business phone number ID, or returns a
// *ValidationError on "from".
func phoneID(from string) (uint64, error) {
	id, err := phone.ParseFrom(from)
	if err != nil {
		var pe *phone.Error
		if errors.As(err, &pe) {
			return 0, invalid("from", pe.Reason)
		}
		return 0, invalid("from", "not a phone number ID")
	}
	return id, nil
}

// deadlineOf is the earliest of the messages' freshness deadlines and ctx's.
func deadlineOf(ctx context.Context, msgs []Message, now time.Time) time.Time {
	var d time.Time
	earlier := func(t time.Time) {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	for _, m := range msgs {
		earlier(m.expiry(now))
	}
	if cd, ok := ctx.Deadline(); ok {
		earlier(cd)
	}
	return d
}

// sending is one SendBurst in progress.
type sending struct {
	c      *Client
	ctx    context.Context
	from   string
	fromID uint64          // from, parsed
	to     phone.Recipient // zero for MarkRead
	pair   pairlimit.Pair  // zero for MarkRead
	msgs   []Message
	keys   []string
	bodies [][]byte
	// endpoints[i] is where msgs[i] is posted (endpointMessages or
	// endpointMarketing): decided by prepare, and again by route when it
	// is posted.
	endpoints []string
	// misrouted[i] is set once Meta refused msgs[i] at
	// /marketing_messages as not a marketing template (134100, 131055):
	// from then on it goes to /messages, whatever the registry says.
	misrouted []bool
	rerouted  bool // the current retry is a re-route: no backoff
	results   []*Result
	attempts  []int
	states    []SendState // each message's state once it has one
	deadline  time.Time
	refusals  int                        // consecutive refusals of the current message
	last      errcodes.Code              // the last refusal's code, or 0
	lastErr   *errcodes.Error            // the last refusal
	hold      holdNote                   // which limit held the current attempt, for Event.Held
	who       *struct{ to, pair string } // the masked recipient and pair pseudonym, made once
	// gate0 is the write-time check of the first request, allocated with
	// the sending (most sends make one request); a later request gets a
	// gate of its own, since a transport may still read an ended
	// request's body, which its gate then refuses.
	gate0 gate
}

// run sends the messages in order as one burst; after a refusal, the
// refused message and those after it go again as a new burst, once the
// pair has repaid the bubbles Meta accepted and the refusal's hold is over.
func (s *sending) run() error {
	next := 0
	notBefore := time.Time{}
	for next < len(s.msgs) {
		sent, retry, err := s.attempt(next, len(s.msgs)-next, notBefore)
		next += sent
		if err != nil {
			return err
		}
		if retry && s.rerouted {
			// Meta refused the message at /marketing_messages as not a
			// marketing template: it goes to /messages at once, as a new
			// request (the refusal proves nothing was sent).
			s.rerouted, notBefore = false, time.Time{}
			continue
		}
		if retry {
			if s.attempts[next] >= s.c.attempts {
				s.states[next] = StateRefused
				return &SendError{State: StateRefused, IdempotencyKey: s.keys[next], Attempts: s.attempts[next],
					Err: fmt.Errorf("%w: %w", backoff.ErrMaxAttempts, s.lastErr)}
			}
			notBefore = s.c.clock.Now().Add(s.c.schedule.Delay(s.refusals - 1))
			continue
		}
		s.refusals, notBefore = 0, time.Time{}
	}
	return nil
}

// attempt admits messages [i, i+n), waits for them and posts them in order.
// It returns how many were accepted, whether message i+sent was refused for
// a limit and should be retried, or an error that ends the send.
func (s *sending) attempt(i, n int, notBefore time.Time) (sent int, retry bool, err error) {
	c := s.c
	start := c.clock.Now()
	s.hold = holdNote{}
	a, err := s.admit(i, n, notBefore)
	if err != nil {
		return 0, false, err
	}
	num := c.Number(s.from)
	win := hasWindow(num) // late sends keep their slots (see pace.go)
	mark, fence := writemark.From(s.ctx), writemark.FenceFrom(s.ctx)
	for k := 0; k < n; k++ {
		idx := i + k
		marked := false // the send's write mark returned nil (see gate.ready)
	wait:
		err := s.waitSlot(a, k)
		posted := c.clock.Now()
		if err == nil && paceWrites && !win && posted.Sub(a.slots[k].at) > num.Tolerance() {
			// Late before the request is even made (the wait woke late):
			// the slot is given back and a new one taken, as the check
			// would, without a request to end (see pace.go).
			num.ObserveSend(a.slots[k].at, posted, time.Time{})
			s.giveBack(a, k)
			if err = s.slotAgain(a, k, num, posted, false); err == nil {
				goto wait
			}
		}
		if err != nil {
			a.settle(posted, k, k)
			s.states[idx] = StateNotSubmitted
			var bp *BackpressureError
			if errors.As(err, &bp) { // a cut moved the slot past the deadline
				return k, false, bp
			}
			return k, false, &SendError{State: StateNotSubmitted, IdempotencyKey: s.keys[idx], Attempts: s.attempts[idx], Err: err}
		}
		endpoint, body, err := s.route(idx)
		if err != nil {
			a.settle(c.clock.Now(), k, k)
			s.states[idx] = StateNotSubmitted
			return k, false, &SendError{State: StateNotSubmitted, IdempotencyKey: s.keys[idx], Attempts: s.attempts[idx], Err: err}
		}
		s.attempts[idx]++
		var g *gate // nil only on the "off" side of the benchmark of its cost
		if paceWrites {
			g = &s.gate0
			if g.s != nil { // not the first request
				g = new(gate)
			}
			*g = gate{s: s, a: a, k: k, num: num, win: win, posted: posted, mark: mark, fence: fence, key: s.keys[idx], marked: marked}
		}
		out := c.post(s.ctx, s.from, endpoint, s.msgs[idx].kind, body, g)
		at := c.clock.Now()
		if out.paced && errors.Is(out.err, errWaitOutside) {
			// The check found the message must wait for a new slot or a
			// hold: it waits here, outside any request, then goes in a new
			// request of the same attempt (no byte of the body left).
			marked = g.marked
			if err := s.slotOutside(a, k, num); err != nil {
				out.err = err
			} else {
				s.attempts[idx]--
				goto wait
			}
		}
		reroute := endpoint == endpointMarketing && !s.misrouted[idx] && misrouted(out.gerr)
		if reroute {
			out.state = StateRefused // not sent; sent again to /messages
		}
		if out.paced { // the write-time check gave up: nothing left
			a.settle(at, k, k)
			s.states[idx] = StateNotSubmitted
			var bp *BackpressureError
			if errors.As(out.err, &bp) {
				return k, false, bp
			}
			return k, false, &SendError{State: StateNotSubmitted, IdempotencyKey: s.keys[idx], Attempts: s.attempts[idx], Err: out.err}
		}
		s.emit(Event{At: at, From: s.from, Kind: s.msgs[idx].kind, Attempt: s.attempts[idx], Wait: a.slots[k].at.Sub(start),
			Held: s.hold.by(a.slots[k].at), Duration: at.Sub(wroteAt(g, posted)),
			IdempotencyKey: s.keys[idx], State: out.state, Err: out.err, Code: codeOf(out.gerr), MessageID: messageIDOf(out.result)})
		s.states[idx] = out.state
		switch out.state {
		case StateAccepted:
			c.accepted(at, s.from, s.pair)
			out.result.Attempts, out.result.IdempotencyKey, out.result.SentAt = s.attempts[idx], s.keys[idx], at
			out.result.Endpoint = endpoint
			s.results[idx] = out.result
			continue
		case StateSubmittedUnknown: // the message may count at Meta
			a.settle(at, k+1, k+1)
		default: // Meta did not take it: only the bubbles before it count
			a.settle(at, k, k+1)
		}
		if reroute {
			s.misrouted[idx], s.rerouted, s.lastErr = true, true, out.gerr
			return k, true, nil
		}
		if out.state == StateRefused {
			// Retried only when a limiter holds the refusal: waiting out the
			// hold is what makes a retry worth making.
			if hold := c.refused(at, s.from, s.pair, out.gerr); hold > 0 && retried(out.gerr.Class()) {
				if k > 0 {
					s.refusals = 0 // a new message's first refusal
				}
				s.refusals++
				s.last, s.lastErr = out.gerr.Code, out.gerr
				return k, true, nil
			}
		}
		return k, false, &SendError{State: out.state, IdempotencyKey: s.keys[idx], Attempts: s.attempts[idx], Err: out.err}
	}
	return n, false, nil
}

func codeOf(e *errcodes.Error) errcodes.Code {
	if e == nil {
		return 0
	}
	return e.Code
}

func messageIDOf(r *Result) string {
	if r == nil {
		return ""
	}
	return r.MessageID
}

// remember records each message's outcome in the Client's idempotency
// memory, and forgets the keys of messages that were not sent, so that
// they may be sent again.
func (s *sending) remember(err error) {
	now := s.c.clock.Now()
	for i, key := range s.keys {
		if s.msgs[i].IdempotencyKey == "" {
			continue // generated: never claimed
		}
		switch st := s.states[i]; st {
		case StateAccepted:
			s.c.idem.record(now, key, sent{state: st, result: s.results[i], attempts: s.attempts[i]})
		case StateFailed, StateSubmittedUnknown:
			s.c.idem.record(now, key, sent{state: st, err: causeOf(err), attempts: s.attempts[i]})
		default: // not sent: refused, not submitted, or never attempted
			s.c.idem.release(key)
		}
	}
}

// causeOf strips the *SendError off err, so that a duplicate's error
// carries the first send's cause once.
func causeOf(err error) error {
	var se *SendError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}

// accepted and refused feed Meta's answers back to the limits.
func (c *Client) accepted(at time.Time, from string, pair pairlimit.Pair) {
	c.Number(from).Accepted(at)
	c.budget.Accepted(at)
	if !pair.IsZero() {
		c.pairs.Accepted(at, pair)
	}
}

// refused applies the hold of refusal e to the limit errcodes says it
// holds, for the wait errcodes gives, and returns the hold (zero when no
// limiter holds that code, or no wait lifts it: 131048).
func (c *Client) refused(at time.Time, from string, pair pairlimit.Pair, e *errcodes.Error) time.Duration {
	cl := e.Class()
	switch cl.Hold {
	case errcodes.HoldPair:
		if !pair.IsZero() {
			return c.pairs.Refused(at, pair)
		}
	case errcodes.HoldPhoneNumber:
		var hold time.Duration
		if cl.Throttling {
			hold = c.Number(from).Throttled(at, cl.Wait, cl.MaxWait)
		} else {
			hold = c.Number(from).Hold(at, cl.Wait, cl.MaxWait)
		}
		if hold > 0 {
			c.numberHolds.Store(from, e.Code)
		}
		return hold
	case errcodes.HoldApp, errcodes.HoldWABA:
		return c.budget.Hold(at, cl.Wait, cl.MaxWait)
	}
	return 0
}
