package outbox

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The operator's view of an outbox: list items by state, the deepest lanes,
// a lane's history, a trend of transitions, and the two actions an
// operator takes on an item (requeue, expire). Reads change nothing;
// actions are recorded as transitions with the operator's reason.

// Errors of the operator actions, matched with errors.Is.
var (
	// ErrMayHaveBeenSent is matched by Requeue's error for an item that may
	// have reached Meta (submitted_unknown, or accepted once): sending it
	// again may deliver it twice. RequeueOptions.Force overrides it.
	ErrMayHaveBeenSent = errors.New("outbox: the item may have been sent")
	// ErrWrongState is matched by the error of an action the item's state
	// does not allow (requeueing a live item, expiring a final one), or
	// whose state changed while the action was taken.
	ErrWrongState = errors.New("outbox: the item's state does not allow it")
	// ErrNoReason is matched by the error of an action given no reason.
	ErrNoReason = errors.New("outbox: an operator action needs a reason")
)

// DefaultListLimit is how many items List returns when Query.Limit is 0;
// MaxListLimit bounds it.
const (
	DefaultListLimit = 100
	MaxListLimit     = 10_000
)

// Query selects items for List. The zero Query lists the DefaultListLimit
// items whose state changed last, in any state.
type Query struct {
	// States keeps the items in any of these states (none: every state).
	States []State
	// From and To keep one business number's items, or one lane's (To is
	// the recipient's digits). Empty: no filter.
	From, To string
	// Limit bounds the items returned (0: DefaultListLimit, at most
	// MaxListLimit).
	Limit int
}

// List returns the items q selects, the most recently changed first,
// without their History (Get has it). It changes nothing.
func (o *Outbox) List(ctx context.Context, q Query) ([]Item, error) {
	if o.isClosed() {
		return nil, ErrClosed
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	var where []string
	var args []any
	if len(q.States) > 0 {
		where = append(where, "state IN (?"+strings.Repeat(", ?", len(q.States)-1)+")")
		for _, s := range q.States {
			args = append(args, s.String())
		}
	}
	if q.From != "" {
		where = append(where, "sender = ?")
		args = append(args, q.From)
	}
	if q.To != "" {
		where = append(where, "recipient = ?")
		args = append(args, q.To)
	}
	query := `SELECT ` + itemColumns + ` FROM outbox_items`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY state_at DESC, id DESC LIMIT ?`
	rows, err := o.db.QueryContext(ctx, o.q(query), append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("outbox: list: %w", err)
	}
	defer rows.Close()
	var items []Item
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, fmt.Errorf("outbox: list: %w", err)
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("outbox: list: %w", err)
	}
	return items, nil
}

// Lane is one lane's live depth.
type Lane struct {
	// From is the business phone number ID; To the recipient's digits
	// ("" for read receipts).
	From, To string
	// Live counts its queued and sending items.
	Live int
	// Oldest is when its oldest live item was enqueued.
	Oldest time.Time
}

// DeepestLanes returns up to n lanes with the most live items, deepest
// first. It changes nothing.
func (o *Outbox) DeepestLanes(ctx context.Context, n int) ([]Lane, error) {
	if o.isClosed() {
		return nil, ErrClosed
	}
	if n <= 0 {
		return nil, nil
	}
	rows, err := o.db.QueryContext(ctx, o.q(`SELECT sender, recipient, COUNT(*), MIN(enqueued_at) FROM outbox_items
		WHERE state IN ('queued', 'sending') GROUP BY lane, sender, recipient ORDER BY COUNT(*) DESC, MIN(enqueued_at) LIMIT ?`), min(n, MaxListLimit))
	if err != nil {
		return nil, fmt.Errorf("outbox: lanes: %w", err)
	}
	defer rows.Close()
	var out []Lane
	for rows.Next() {
		var l Lane
		var oldest int64
		if err := rows.Scan(&l.From, &l.To, &l.Live, &oldest); err != nil {
			return nil, fmt.Errorf("outbox: lanes: %w", err)
		}
		l.Oldest = fromNanos(oldest)
		out = append(out, l)
	}
	return out, rows.Err()
}

// LaneEvent is one transition of an item of a lane.
type LaneEvent struct {
	// At is the instant of the transition.
	At time.Time
	// Key is the item's idempotency key.
	Key string
	// State is the state entered: StateSending is a dispatch to Meta.
	State State
	// Code is Meta's error code of this transition when it records one
	// (the item's code for its final transition, and the code quoted by a
	// refusal's reason for a requeue), or 0.
	Code int
	// Reason is the transition's reason.
	Reason string
}

// codeInReason finds the Meta code that a recorded error quotes.
var codeInReason = regexp.MustCompile(`errcodes: ([0-9]{1,7})\b`)

// LaneHistory returns the transitions of the items of lane (from, to)
// recorded from since on, oldest first, at most limit (0:
// DefaultListLimit, at most MaxListLimit). It is the record behind a
// pair's timeline: its dispatches, what Meta answered, its refusals. It
// changes nothing.
func (o *Outbox) LaneHistory(ctx context.Context, from, to string, since time.Time, limit int) ([]LaneEvent, error) {
	if o.isClosed() {
		return nil, ErrClosed
	}
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	// An item's first transition (queued, at its enqueue) is read from
	// the item; the others from outbox_history.
	rows, err := o.db.QueryContext(ctx, o.q(`WITH h (item, at, state, reason, hid) AS (
			SELECT i.id, i.enqueued_at, 'queued', '', 0 FROM outbox_items i WHERE i.sender = ? AND i.recipient = ?
			UNION ALL
			SELECT t.item, t.at, t.state, t.reason, t.id FROM outbox_history t JOIN outbox_items i ON i.id = t.item
				WHERE i.sender = ? AND i.recipient = ?)
		SELECT h.at, i.ikey, h.state, h.reason, i.state, i.code, h.hid = (SELECT COALESCE(MAX(u.id), 0) FROM outbox_history u WHERE u.item = h.item)
		FROM h JOIN outbox_items i ON i.id = h.item
		WHERE h.at >= ? ORDER BY h.at, h.hid LIMIT ?`), from, to, from, to, nanos(since), limit)
	if err != nil {
		return nil, fmt.Errorf("outbox: lane history: %w", err)
	}
	defer rows.Close()
	var out []LaneEvent
	for rows.Next() {
		var e LaneEvent
		var at int64
		var st, cur string
		var code int
		var last bool
		if err := rows.Scan(&at, &e.Key, &st, &e.Reason, &cur, &code, &last); err != nil {
			return nil, fmt.Errorf("outbox: lane history: %w", err)
		}
		e.At = fromNanos(at)
		e.State, _ = parseState(st)
		if last && st == cur {
			e.Code = code
		}
		if e.Code == 0 {
			if m := codeInReason.FindStringSubmatch(e.Reason); m != nil {
				e.Code, _ = strconv.Atoi(m[1])
			}
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// TrendPoint counts the transitions into each state during one step.
type TrendPoint struct {
	// At is the step's start.
	At time.Time
	// Entered counts the items that entered each state during the step.
	Entered map[State]int
}

// Trend counts the transitions into each state per step from since to
// now on the Outbox's clock (at most 1,000 steps; step at least a
// second): the queue's recent flow. It changes nothing; it reads the
// transitions of the period.
func (o *Outbox) Trend(ctx context.Context, since time.Time, step time.Duration) ([]TrendPoint, error) {
	if o.isClosed() {
		return nil, ErrClosed
	}
	now := o.cfg.clock.Now()
	step = max(step, time.Second)
	if now.Sub(since) > 1000*step {
		since = now.Add(-1000 * step)
	}
	if !since.Before(now) {
		return nil, nil
	}
	rows, err := o.db.QueryContext(ctx, o.q(`SELECT b, state, COUNT(*) FROM (
			SELECT (at - ?) / ? AS b, state FROM outbox_history WHERE at >= ? AND at <= ?
			UNION ALL
			SELECT (enqueued_at - ?) / ?, 'queued' FROM outbox_items WHERE enqueued_at >= ? AND enqueued_at <= ?) AS t
		GROUP BY b, state`), nanos(since), int64(step), nanos(since), nanos(now), nanos(since), int64(step), nanos(since), nanos(now))
	if err != nil {
		return nil, fmt.Errorf("outbox: trend: %w", err)
	}
	defer rows.Close()
	n := int(now.Sub(since)/step) + 1
	out := make([]TrendPoint, n)
	for i := range out {
		out[i] = TrendPoint{At: since.Add(time.Duration(i) * step), Entered: map[State]int{}}
	}
	for rows.Next() {
		var b int64
		var st string
		var c int
		if err := rows.Scan(&b, &st, &c); err != nil {
			return nil, fmt.Errorf("outbox: trend: %w", err)
		}
		if s, ok := parseState(st); ok && b >= 0 && int(b) < n {
			out[b].Entered[s] += c
		}
	}
	return out, rows.Err()
}

// RequeueOptions qualifies Requeue.
type RequeueOptions struct {
	// Reason is the operator's reason, recorded with the transition
	// (required).
	Reason string
	// Force requeues an item that may have been sent (submitted_unknown,
	// or accepted once): it is sent again under a new resend key, and may
	// reach the user twice.
	Force bool
	// ExpiresAt is the item's new freshness deadline, required when its
	// deadline has passed (zero: keep the deadline it has).
	ExpiresAt time.Time
}

// Requeue queues a dead-lettered (failed or expired) or submitted_unknown
// item again, at the head of its lane, and returns it with its history.
// The transition records "requeued by operator: " and opts.Reason. An
// item that may have been sent is refused (ErrMayHaveBeenSent) unless
// opts.Force; a live item is refused (ErrWrongState). An item that had
// reached the Client goes under a new resend key (as WithResend's resends
// do), since the Client remembers the keys it sent.
func (o *Outbox) Requeue(ctx context.Context, key string, opts RequeueOptions) (Item, error) {
	if o.isClosed() {
		return Item{}, ErrClosed
	}
	reason := strings.TrimSpace(opts.Reason)
	if reason == "" {
		return Item{}, fmt.Errorf("outbox: requeue %q: %w", key, ErrNoReason)
	}
	it, err := o.Get(ctx, key)
	if err != nil {
		return Item{}, err
	}
	now := o.cfg.clock.Now()
	switch {
	case !it.State.Final():
		return Item{}, fmt.Errorf("outbox: requeue %q: it is %v: %w", key, it.State, ErrWrongState)
	case mayHaveBeenSent(it) && !opts.Force:
		return Item{}, fmt.Errorf("outbox: requeue %q (%v): %w; force it to send it again", key, it.State, ErrMayHaveBeenSent)
	}
	exp := it.ExpiresAt
	if !opts.ExpiresAt.IsZero() {
		if !opts.ExpiresAt.After(now) {
			return Item{}, fmt.Errorf("outbox: requeue %q: the new deadline %v has passed: %w", key, opts.ExpiresAt, ErrExpired)
		}
		exp = opts.ExpiresAt
	} else if !exp.IsZero() && !exp.After(now) {
		return Item{}, fmt.Errorf("outbox: requeue %q: its deadline passed at %v, give a new one: %w", key, exp, ErrExpired)
	}
	resend := 0
	if it.Attempts > 0 || it.MessageID != "" {
		resend = 1
	}
	why := "requeued by operator: " + reason
	if opts.Force && mayHaveBeenSent(it) {
		why = "requeued by operator, forced (it may have been sent): " + reason
	}
	res, err := o.db.ExecContext(ctx, o.q(`UPDATE outbox_items SET state = 'queued', state_at = ?, due_at = ?, expires_at = ?, reason = ?,
		code = 0, owner = '', lease_until = 0, resends = resends + ? WHERE ikey = ? AND state = ? AND state_at = ?`),
		nanos(now), nanos(now), nanos(exp), why, resend, key, it.State.String(), nanos(it.UpdatedAt))
	if err != nil {
		return Item{}, fmt.Errorf("outbox: requeue: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Item{}, fmt.Errorf("outbox: requeue %q: its state changed meanwhile: %w", key, ErrWrongState)
	}
	o.poke()
	o.notify(events(now, StateQueued, why, key))
	return o.Get(ctx, key)
}

// mayHaveBeenSent reports whether it may have reached Meta: its outcome is
// unknown, or Meta accepted it once (its wamid is known).
func mayHaveBeenSent(it Item) bool {
	switch it.State {
	case StateSubmittedUnknown, StateAccepted, StateDelivered, StateRead:
		return true
	}
	return it.MessageID != ""
}

// Expire dead-letters a queued item as expired, never sending it, and
// returns it with its history; the transition records "expired by
// operator: " and reason. An item in any other state is refused
// (ErrWrongState): a sending item may be in flight.
func (o *Outbox) Expire(ctx context.Context, key, reason string) (Item, error) {
	if o.isClosed() {
		return Item{}, ErrClosed
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return Item{}, fmt.Errorf("outbox: expire %q: %w", key, ErrNoReason)
	}
	now := o.cfg.clock.Now()
	why := "expired by operator: " + reason
	res, err := o.db.ExecContext(ctx, o.q(`UPDATE outbox_items SET state = 'expired', state_at = ?, reason = ? WHERE ikey = ? AND state = 'queued'`),
		nanos(now), why, key)
	if err != nil {
		return Item{}, fmt.Errorf("outbox: expire: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		it, err := o.Get(ctx, key)
		if err != nil {
			return Item{}, err
		}
		return Item{}, fmt.Errorf("outbox: expire %q: it is %v, not queued: %w", key, it.State, ErrWrongState)
	}
	o.notify(events(now, StateExpired, why, key))
	return o.Get(ctx, key)
}
