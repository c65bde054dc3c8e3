package cloudapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/clockwait"
	"github.com/wapace/wapace/internal/phone"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/throughput"
)

// Result is what Meta answered for an accepted message.
type Result struct {
	// MessageID is the WhatsApp message ID (wamid) Meta assigned.
	MessageID string
	// WaID is the recipient's WhatsApp ID from contacts[].wa_id. Key later
	// sends on it: Meta may rewrite the number you gave (Brazil's ninth
	// digit, for one).
	WaID string
	// Input is the recipient as sent (normalised digits).
	Input string
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

// Event describes one attempt, for an observer (WithObserver) and the log.
type Event struct {
	// At is the instant of the attempt on the Client's clock.
	At time.Time
	// From is the business phone number ID.
	From string
	// To is the recipient, masked.
	To string
	// Pair is a pseudonym of the (number, recipient) pair, stable for one
	// Client, so that a log can be grouped by pair without naming the user.
	Pair string
	// Kind is the message's kind.
	Kind Kind
	// Attempt counts the requests for this message, from 1.
	Attempt int
	// Wait is how long the message waited for its slot before this attempt.
	Wait time.Duration
	// MessageID is the wamid when Meta accepted the message.
	MessageID string
	// State is the message's state after the attempt; StateQueued when it
	// will be retried.
	State SendState
	// Code is Meta's error code when the attempt failed with one.
	Code errcodes.Code
	// Err is the attempt's error, nil on success.
	Err error
	// IdempotencyKey is the message's key.
	IdempotencyKey string
}

// Send sends m from business number from (its phone number ID) and returns
// Meta's answer. On the way it validates m (a *ValidationError, nothing
// spent), reserves the pair, the number and, for business-initiated
// templates, the tier, and gives everything back with a *BackpressureError
// if the message could not go before its freshness deadline or ctx's. It
// then waits on the clock, posts, and classifies the answer:
//
//   - 131056: the pair is held for 4^X s and this message alone is retried;
//     other recipients are not slowed.
//   - 130429, 131057, 2494100: this number is held and the message retried.
//   - 4, 80007, 80008: the call budget is held and the message retried.
//   - anything that does not prove refusal (a transport failure after the
//     request may have been written, a timeout, a 5xx, 1, 2, 131000, 131016):
//     an error matching ErrSubmittedUnknown, and no resend.
//   - other errors (131049, request errors, ...): a *SendError with state
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
// afterwards. It fails at once, sending nothing, if the messages do not all
// go to the same recipient or are more than the pair limiter's burst cap
// (pairlimit.ErrBurstTooLarge). If a bubble is refused for a limit it is
// retried as Send does, and the bubbles after it follow it; if it fails
// otherwise, the bubbles after it are not sent (their results are nil) so
// that the user never sees a reply with a hole in it.
func (c *Client) SendBurst(ctx context.Context, from string, msgs ...Message) ([]*Result, error) {
	if len(msgs) == 0 {
		return nil, invalid("messages", "no message to send")
	}
	var pair pairlimit.Pair
	var err error
	for i, m := range msgs {
		if err := m.Validate(); err != nil {
			if len(msgs) > 1 {
				return nil, fmt.Errorf("cloudapi: bubble %d: %w", i, err)
			}
			return nil, err
		}
		if m.kind == KindRead {
			if len(msgs) > 1 {
				return nil, invalid("messages", "MarkRead cannot be part of a burst")
			}
			if _, err := phone.ParseFrom(from); err != nil {
				var pe *phone.Error
				errors.As(err, &pe)
				return nil, invalid("from", pe.Reason)
			}
			continue
		}
		p, perr := pairlimit.NewPair(from, m.to)
		if perr != nil {
			var ne *pairlimit.NumberError
			if errors.As(perr, &ne) && ne.Field == "from" {
				return nil, invalid("from", ne.Reason)
			}
			return nil, invalid("to", "not a phone number")
		}
		if i > 0 && p != pair {
			return nil, invalid("messages", "a burst goes to one recipient")
		}
		pair = p
	}
	if len(msgs) > c.pairs.BurstCap() {
		return nil, fmt.Errorf("cloudapi: %d bubbles: %w", len(msgs), pairlimit.ErrBurstTooLarge)
	}
	s := &sending{c: c, ctx: ctx, from: from, pair: pair, msgs: msgs,
		keys: make([]string, len(msgs)), results: make([]*Result, len(msgs)), attempts: make([]int, len(msgs))}
	now := c.clock.Now()
	s.deadline = deadlineOf(ctx, msgs, now)
	for i, m := range msgs {
		s.keys[i] = m.IdempotencyKey
		if s.keys[i] == "" {
			s.keys[i] = c.newKey()
		}
	}
	err = s.run()
	return s.results, err
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
	c        *Client
	ctx      context.Context
	from     string
	pair     pairlimit.Pair // zero for MarkRead
	msgs     []Message
	keys     []string
	results  []*Result
	attempts []int
	deadline time.Time
	refusals int             // consecutive refusals of the current message
	lastErr  *errcodes.Error // the last refusal
}

// run sends the messages in order: the first attempt as one burst, and a
// message refused for a limit again alone, with those after it following.
func (s *sending) run() error {
	next := 0
	notBefore := time.Time{}
	for next < len(s.msgs) {
		n := len(s.msgs) - next
		if next > 0 || s.refusals > 0 {
			n = 1 // after a refusal, bubbles go one by one, in order
		}
		sent, retry, err := s.attempt(next, n, notBefore)
		next += sent
		if err != nil {
			return err
		}
		if retry {
			i := next
			if s.attempts[i] >= s.c.attempts {
				return &SendError{State: StateNotSubmitted, IdempotencyKey: s.keys[i], Attempts: s.attempts[i],
					Err: fmt.Errorf("%w: %w", backoff.ErrMaxAttempts, s.lastErr)}
			}
			notBefore = s.c.clock.Now().Add(s.c.schedule.Delay(s.refusals - 1))
			continue
		}
		s.refusals, notBefore = 0, time.Time{}
	}
	return nil
}

// lastCode is the code of the last refusal, or -1.
func (s *sending) lastCode() errcodes.Code {
	if s.lastErr == nil {
		return -1
	}
	return s.lastErr.Code
}

// slot is one admitted message: when it may go.
type slot struct {
	at  time.Time
	num throughput.Reservation
}

// attempt admits messages [i, i+n), waits for them and posts them in order.
// It returns how many were accepted, whether message i+sent was refused for
// a limit and should be retried, or an error that ends the send.
func (s *sending) attempt(i, n int, notBefore time.Time) (sent int, retry bool, err error) {
	c := s.c
	start := c.clock.Now()
	slots, pairRes, err := s.admit(i, n, notBefore)
	if err != nil {
		return 0, false, err
	}
	giveBack := func(from int) {
		now := c.clock.Now()
		for _, sl := range slots[from:] {
			sl.num.CancelAt(now)
		}
		if from == 0 {
			pairRes.CancelAt(now)
		}
	}
	for k := range n {
		idx := i + k
		if err := clockwait.Until(s.ctx, c.clock, slots[k].at); err != nil {
			giveBack(k)
			return k, false, &SendError{State: StateNotSubmitted, IdempotencyKey: s.keys[idx], Attempts: s.attempts[idx], Err: err}
		}
		s.attempts[idx]++
		out := c.post(s.ctx, s.from, s.msgs[idx], s.keys[idx])
		at := c.clock.Now()
		ev := Event{At: at, From: s.from, Kind: s.msgs[idx].kind, Attempt: s.attempts[idx], Wait: slots[k].at.Sub(start),
			IdempotencyKey: s.keys[idx], State: out.state, Err: out.err}
		if !s.pair.IsZero() {
			ev.To, ev.Pair = pairlimit.MaskRecipient(s.pair.To()), c.pseudonym(s.pair)
		}
		var ge *errcodes.Error
		if errors.As(out.err, &ge) {
			ev.Code = ge.Code
		}
		switch out.state {
		case StateAccepted:
			c.accepted(at, s.from, s.pair)
			out.result.Attempts, out.result.IdempotencyKey, out.result.SentAt = s.attempts[idx], s.keys[idx], at
			s.results[idx] = out.result
			ev.MessageID = out.result.MessageID
			c.emit(s.ctx, ev)
			continue
		case StateQueued: // refused for a limit: hold its scope, retry this message
			if k == 0 {
				pairRes.Refund() // Meta counted none of the reservation's messages
			}
			c.refused(at, s.from, s.pair, ge)
			s.refusals++
			s.lastErr = ge
			c.emit(s.ctx, ev)
			giveBack(k + 1)
			return k, true, nil
		default:
			c.emit(s.ctx, ev)
			giveBack(k + 1)
			return k, false, &SendError{State: out.state, IdempotencyKey: s.keys[idx], Attempts: s.attempts[idx], Err: out.err}
		}
	}
	return n, false, nil
}

// admit reserves the pair (n messages together), the number (one slot per
// message) and the tier at instants that agree, or gives everything back
// with a *BackpressureError as soon as they cannot agree before the
// deadline.
//
// Waits that are known in advance (a retry's least wait, a budget hold, a
// pair still in debt) are waited out first, holding nothing, and checked
// against the deadline before waiting. The number is then asked at the
// current instant only: its queue sets the pace of a campaign, and a bucket
// asked at future instants would push every other recipient back. The pair
// is reserved at the number's slot, so that Meta sees the burst start
// exactly when the pair limiter said.
func (s *sending) admit(i, n int, notBefore time.Time) ([]slot, pairlimit.Reservation, error) {
	c := s.c
	num := c.Number(s.from)
	window := c.pairs.Policy().BurstWindow
	cause := LimitPair
	if lc := s.lastCode(); lc == errcodes.ThroughputLimit || lc == errcodes.Maintenance || lc == errcodes.MaintenanceMode {
		cause = LimitNumber
	}
	slots := make([]slot, n)
	var pr pairlimit.Reservation
	release := func(now time.Time) {
		for k := range slots {
			slots[k].num.CancelAt(now)
		}
		pr.CancelAt(now)
		pr = pairlimit.Reservation{}
	}
	start := c.clock.Now()
	for round := 0; ; round++ {
		now := c.clock.Now()
		// Known waits first.
		wait, waitCause := notBefore, cause
		if h := c.budget.HeldUntil(); h.After(wait) {
			wait, waitCause = h, LimitBudget
		}
		if !s.pair.IsZero() && !wait.After(now) {
			probe := c.pairs.ReserveN(now, s.pair, n)
			if ap := probe.TimeToAct(); ap.After(now) {
				wait, waitCause = ap, LimitPair
			}
			probe.CancelAt(now)
		}
		if wait.After(now) {
			if err := s.late(wait, start, waitCause); err != nil {
				return nil, pr, err
			}
			if err := clockwait.Until(s.ctx, c.clock, wait); err != nil {
				return nil, pr, &SendError{State: StateNotSubmitted, IdempotencyKey: s.keys[i], Attempts: s.attempts[i], Err: err}
			}
			continue
		}
		// The number, now.
		for k := range slots {
			slots[k].num = num.ReserveN(now, 1)
			slots[k].at = slots[k].num.TimeToAct()
		}
		first, last := slots[0].at, slots[n-1].at
		if !s.pair.IsZero() {
			pr = c.pairs.ReserveN(first, s.pair, n)
			if ap := pr.TimeToAct(); ap.After(first) || last.Sub(ap) >= window {
				// Another send to the same user came in between: start over.
				release(now)
				if round == 64 {
					return nil, pr, s.backpressure(LimitPair, errcodes.PairRateLimit, ap.Sub(start))
				}
				continue
			}
		}
		if err := s.late(last, start, LimitNumber); err != nil {
			release(now)
			return nil, pr, err
		}
		if c.tier != nil && s.msgs[i].countsTowardTier() {
			if ok, retryAt := c.tier.Admit(first, s.msgs[i].to); !ok {
				release(now)
				if !s.deadline.IsZero() && retryAt.After(s.deadline) {
					return nil, pr, s.backpressure(LimitTier, 0, retryAt.Sub(start))
				}
				notBefore = retryAt
				continue
			}
		}
		return slots, pr, nil
	}
}

// late returns a *BackpressureError when a message going at `at` misses the
// deadline, naming the limit that set `at`.
func (s *sending) late(at, now time.Time, cause Limit) error {
	if s.deadline.IsZero() || !at.After(s.deadline) {
		return nil
	}
	code := errcodes.PairRateLimit
	switch lc := s.lastCode(); cause {
	case LimitBudget:
		code = errcodes.AppRateLimit
		if lc == errcodes.WABARateLimit || lc == errcodes.WABAManagementRateLimit {
			code = lc
		}
	case LimitNumber:
		code = errcodes.ThroughputLimit
		if lc == errcodes.Maintenance || lc == errcodes.MaintenanceMode {
			code = lc
		}
	}
	if s.pair.IsZero() && cause == LimitPair {
		cause, code = LimitNumber, errcodes.ThroughputLimit
	}
	return s.backpressure(cause, code, at.Sub(now))
}

func (s *sending) backpressure(limit Limit, code errcodes.Code, wait time.Duration) error {
	scope := map[Limit]errcodes.Scope{LimitPair: errcodes.ScopePair, LimitNumber: errcodes.ScopePhoneNumber, LimitBudget: errcodes.ScopeApp, LimitTier: errcodes.ScopeBusiness}[limit]
	if code == errcodes.WABARateLimit || code == errcodes.WABAManagementRateLimit {
		scope = errcodes.ScopeWABA
	}
	return &BackpressureError{Limit: limit, Scope: scope, Code: code, RetryAfter: wait, ExpiresAt: s.deadline,
		SendState: StateNotSubmitted, IdempotencyKey: s.keys[0]}
}

// accepted and refused feed Meta's answers back to the limits.
func (c *Client) accepted(at time.Time, from string, pair pairlimit.Pair) {
	c.Number(from).Accepted(at)
	c.budget.Accepted(at)
	if !pair.IsZero() {
		c.pairs.Accepted(at, pair)
	}
}

func (c *Client) refused(at time.Time, from string, pair pairlimit.Pair, e *errcodes.Error) {
	switch e.Code {
	case errcodes.PairRateLimit:
		if !pair.IsZero() {
			c.pairs.Refused(at, pair)
		}
	case errcodes.ThroughputLimit, errcodes.Maintenance, errcodes.MaintenanceMode:
		c.Number(from).Refused(at, e.Code)
	case errcodes.AppRateLimit, errcodes.WABARateLimit, errcodes.WABAManagementRateLimit:
		c.budget.Refused(at, e.Code)
	}
}

// retriedCodes are the answers that prove Meta refused a message for a
// limit, so that resending it can neither duplicate it nor succeed sooner
// than the limit's hold.
var retriedCodes = map[errcodes.Code]bool{
	errcodes.PairRateLimit: true, errcodes.ThroughputLimit: true,
	errcodes.Maintenance: true, errcodes.MaintenanceMode: true,
	errcodes.AppRateLimit: true, errcodes.WABARateLimit: true, errcodes.WABAManagementRateLimit: true,
}

// outcome is one request's result.
type outcome struct {
	state  SendState // StateAccepted, StateQueued (retry), StateFailed, StateNotSubmitted, StateSubmittedUnknown
	result *Result
	err    error
}

// post makes one request and classifies the answer.
func (c *Client) post(ctx context.Context, from string, m Message, key string) outcome {
	to := ""
	if m.kind != KindRead {
		to, _ = pairlimit.NormalizeRecipient(m.to)
	}
	body, err := m.body(to, key)
	if err != nil {
		return outcome{state: StateNotSubmitted, err: fmt.Errorf("cloudapi: encoding the request: %w", err)}
	}
	url := c.baseURL + "/" + c.version + "/" + from + "/messages"
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return outcome{state: StateNotSubmitted, err: fmt.Errorf("cloudapi: building the request: %w", err)}
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		err = c.scrub(err)
		if !wrote.Load() && preWrite(err) {
			return outcome{state: StateNotSubmitted, err: err}
		}
		return outcome{state: StateSubmittedUnknown, err: fmt.Errorf("%w: %w", ErrSubmittedUnknown, err)}
	}
	defer resp.Body.Close()
	data, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if u, perr := throughput.ParseUsage(resp.Header.Get(throughput.UsageHeader)); perr == nil && len(u) > 0 {
		c.budget.Observe(c.clock.Now(), u)
	}
	status := resp.StatusCode
	if rerr != nil || len(data) > maxBody {
		return outcome{state: StateSubmittedUnknown, err: fmt.Errorf("%w: http %d response unreadable", ErrSubmittedUnknown, status)}
	}
	if status >= 200 && status < 300 {
		if r, ok := parseSuccess(m.kind, data); ok {
			return outcome{state: StateAccepted, result: r}
		}
		return outcome{state: StateSubmittedUnknown, err: fmt.Errorf("%w: http %d without a message ID", ErrSubmittedUnknown, status)}
	}
	ge, perr := errcodes.Parse(status, data)
	if perr != nil {
		return outcome{state: StateSubmittedUnknown, err: fmt.Errorf("%w: %w", ErrSubmittedUnknown, perr)}
	}
	cl := ge.Class()
	switch {
	case cl.OutcomeUnknown:
		return outcome{state: StateSubmittedUnknown, err: fmt.Errorf("%w: %w", ErrSubmittedUnknown, ge)}
	case retriedCodes[ge.Code]:
		return outcome{state: StateQueued, err: ge}
	default:
		return outcome{state: StateFailed, err: ge}
	}
}

// preWrite reports whether a transport error certainly happened before any
// of the request could be written (the connection was never made).
func preWrite(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// scrub makes sure a transport error never carries the token (net/http
// does not put headers in errors; this guards custom transports).
func (c *Client) scrub(err error) error {
	if err != nil && bytes.Contains([]byte(err.Error()), []byte(c.token)) {
		return errors.New("cloudapi: transport error (message withheld: it quoted the access token)")
	}
	return err
}

// parseSuccess reads a 2xx body.
func parseSuccess(kind Kind, data []byte) (*Result, bool) {
	if kind == KindRead {
		var r struct {
			Success bool `json:"success"`
		}
		return &Result{}, json.Unmarshal(data, &r) == nil && r.Success
	}
	var r struct {
		Contacts []struct {
			Input string `json:"input"`
			WaID  string `json:"wa_id"`
		} `json:"contacts"`
		Messages []struct {
			ID            string `json:"id"`
			MessageStatus string `json:"message_status"`
		} `json:"messages"`
	}
	if json.Unmarshal(data, &r) != nil || len(r.Messages) == 0 || r.Messages[0].ID == "" {
		return nil, false
	}
	res := &Result{MessageID: r.Messages[0].ID, MessageStatus: r.Messages[0].MessageStatus}
	if len(r.Contacts) > 0 {
		res.Input, res.WaID = r.Contacts[0].Input, r.Contacts[0].WaID
	}
	return res, true
}

// emit logs an attempt and hands it to the observer.
func (c *Client) emit(ctx context.Context, ev Event) {
	level := slog.LevelInfo
	if ev.Err != nil {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.Time("at", ev.At),
		slog.String("from", ev.From),
		slog.String("to", ev.To),
		slog.String("pair", ev.Pair),
		slog.String("kind", string(ev.Kind)),
		slog.Int("attempt", ev.Attempt),
		slog.Duration("wait", ev.Wait),
		slog.String("state", string(ev.State)),
		slog.String("key", ev.IdempotencyKey),
	}
	if ev.MessageID != "" {
		attrs = append(attrs, slog.String("wamid", ev.MessageID))
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.Int("code", int(ev.Code)), slog.String("error", errcodes.Sanitize(ev.Err.Error())))
	}
	c.log.LogAttrs(ctx, level, "wapace attempt", attrs...)
	if c.observer != nil {
		c.observer(ev)
	}
}
