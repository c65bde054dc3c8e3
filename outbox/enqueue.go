package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/phone"
	"github.com/wapace/wapace/pairlimit"
)

// liveRefresh is how often Enqueue recounts the live items of each
// business number for its capacity check and estimate.
const liveRefresh = 100 * time.Millisecond

// laneLockSpace is the first key of the Postgres advisory locks that
// serialise Enqueue per lane (the second is the hash of the lane); the
// two-key space never meets Open's one-key lock.
const laneLockSpace = 727717

// liveCount caches the live items per business number.
type liveCount struct {
	at       time.Time
	bySender map[string]int
	total    int
}

// Enqueue stores m, to be sent from business number from (its phone
// number ID) by Run, or rejects it at once, storing nothing:
//
//   - an invalid message is a *cloudapi.ValidationError (same rules as
//     cloudapi.Client.Send, and an idempotency key may not end in "#r"
//     and digits: the outbox names its resends so);
//   - a message whose estimated send instant (its lane's depth at the pair
//     rate, the number's queue at its throughput) passes its freshness
//     deadline, or whose deadline has passed, is a *RejectError matching
//     ErrExpired; authentication templates without a deadline get
//     cloudapi.AuthenticationTTL, so they are never queued past their
//     code's validity;
//   - a full queue or lane is a *RejectError matching ErrQueueFull;
//   - with WithServiceWindow, a free-form message to a user outside the
//     window is a *RejectError matching ErrOutsideWindow (code 131047).
//
// The message's idempotency key is its own or a generated one; enqueueing
// a key that exists stores nothing and returns the existing item's ticket
// (Existing set).
func (o *Outbox) Enqueue(ctx context.Context, from string, m cloudapi.Message) (Ticket, error) {
	if o.isClosed() {
		return Ticket{}, ErrClosed
	}
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return Ticket{}, fmt.Errorf("outbox: enqueue: %w", err)
	}
	defer tx.Rollback()
	t, evs, err := o.enqueue(ctx, tx, from, m)
	if err != nil {
		return t, err
	}
	if err := tx.Commit(); err != nil {
		return Ticket{}, fmt.Errorf("outbox: enqueue: %w", err)
	}
	o.poke()
	o.notify(evs)
	return t, nil
}

// EnqueueTx is Enqueue inside the caller's transaction tx (begun on DB()),
// so that a business row and its message commit or roll back together.
// Nothing is visible to Run before tx commits: call Wake after the commit
// (or Run finds it at its next wake-up, see WithIdleWake). The observer
// hears of it at once. With Postgres, tx holds a lock on the message's
// lane until it ends (so that the lane's capacity holds): other enqueues
// to that lane wait for it, so keep such transactions short.
func (o *Outbox) EnqueueTx(ctx context.Context, tx *sql.Tx, from string, m cloudapi.Message) (Ticket, error) {
	if o.isClosed() {
		return Ticket{}, ErrClosed
	}
	if tx == nil {
		return Ticket{}, errors.New("outbox: enqueue: nil transaction")
	}
	t, evs, err := o.enqueue(ctx, tx, from, m)
	if err != nil {
		return t, err
	}
	o.poke()
	o.notify(evs)
	return t, nil
}

// Wake makes Run look for work now. Call it after committing a
// transaction in which EnqueueTx stored items (Run cannot see them before
// the commit); Enqueue needs no Wake.
func (o *Outbox) Wake() { o.poke() }

// poke wakes Run without blocking.
func (o *Outbox) poke() {
	if o == nil {
		return
	}
	o.runMu.Lock()
	defer o.runMu.Unlock()
	for r := range o.runners {
		r.signal()
	}
}

// laneOf validates from and m's recipient and returns the lane and the
// recipient's digits.
func laneOf(from string, m cloudapi.Message) (lane, to string, err error) {
	if m.Kind() == cloudapi.KindRead {
		if _, err := phone.ParseFrom(from); err != nil {
			var pe *phone.Error
			reason := "not a phone number ID"
			if errors.As(err, &pe) {
				reason = pe.Reason
			}
			return "", "", &cloudapi.ValidationError{Field: "from", Reason: reason}
		}
		return from + ">", "", nil
	}
	p, err := pairlimit.NewPair(from, m.To())
	if err != nil {
		var ne *pairlimit.NumberError
		if errors.As(err, &ne) && ne.Field == "from" {
			return "", "", &cloudapi.ValidationError{Field: "from", Reason: ne.Reason}
		}
		return "", "", &cloudapi.ValidationError{Field: "to", Reason: "not a phone number"}
	}
	return p.From() + ">" + p.To(), p.To(), nil
}

// freeForm reports whether a message needs the customer service window.
func freeForm(k cloudapi.Kind) bool { return k != cloudapi.KindTemplate && k != cloudapi.KindRead }

func (o *Outbox) enqueue(ctx context.Context, tx *sql.Tx, from string, m cloudapi.Message) (Ticket, []Event, error) {
	if err := m.Validate(); err != nil {
		return Ticket{}, nil, err
	}
	lane, to, err := laneOf(from, m)
	if err != nil {
		return Ticket{}, nil, err
	}
	now := o.cfg.clock.Now()
	if m.IdempotencyKey == "" {
		m.IdempotencyKey = o.cfg.newKey()
	}
	key := m.IdempotencyKey
	if baseKey(key) != key {
		// The outbox names resends K#r1, K#r2, ...: a caller's key of that
		// form would be taken for a resend of K (by the Client's memory of
		// sent keys and by Reconcile).
		return Ticket{}, nil, &cloudapi.ValidationError{Field: "idempotency_key", Reason: `ends in "#r" and digits, which the outbox keeps for resends`}
	}
	if m.ExpiresAt.IsZero() && m.Kind() == cloudapi.KindTemplate && m.Category == cloudapi.CategoryAuthentication {
		m.ExpiresAt = now.Add(cloudapi.AuthenticationTTL)
	}
	reject := func(reason error, full string, code errcodes.Code, wait time.Duration) error {
		hold := errcodes.HoldNone
		if code != 0 {
			hold = code.Class().Hold
		}
		bp := &cloudapi.BackpressureError{Limit: hold, Code: code, Wait: wait,
			ExpiresAt: m.ExpiresAt, IdempotencyKey: key}
		return &RejectError{BackpressureError: bp, Reason: reason, Full: full}
	}

	if o.d.postgres {
		// At READ COMMITTED two transactions could both count the lane
		// under its capacity and both insert: serialise the count and the
		// insert per lane, until the transaction ends (lanes whose names
		// hash alike share a lock, which only serialises them).
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, laneLockSpace, lane); err != nil {
			return Ticket{}, nil, fmt.Errorf("outbox: enqueue: %w", err)
		}
	}

	// An existing key stores nothing new. (One query reads the key and
	// the lane's depth.)
	var st sql.NullString
	var enq, exp sql.NullInt64
	var laneDepth int
	err = tx.QueryRowContext(ctx, o.q(`SELECT
		(SELECT state FROM outbox_items WHERE ikey = ?), (SELECT enqueued_at FROM outbox_items WHERE ikey = ?),
		(SELECT expires_at FROM outbox_items WHERE ikey = ?),
		(SELECT COUNT(*) FROM outbox_items WHERE lane = ? AND state IN ('queued', 'sending'))`), key, key, key, lane).Scan(&st, &enq, &exp, &laneDepth)
	if err != nil {
		return Ticket{}, nil, fmt.Errorf("outbox: enqueue: %w", err)
	}
	if st.Valid {
		s, _ := parseState(st.String)
		return Ticket{Key: key, State: s, Existing: true, EnqueuedAt: fromNanos(enq.Int64), ExpiresAt: fromNanos(exp.Int64)}, nil, nil
	}

	if !m.ExpiresAt.IsZero() && !m.ExpiresAt.After(now) {
		return Ticket{}, nil, reject(ErrExpired, "", 0, 0)
	}
	if o.cfg.window > 0 && freeForm(m.Kind()) {
		var last int64
		err := tx.QueryRowContext(ctx, o.q(`SELECT last_inbound FROM outbox_windows WHERE sender = ? AND recipient = ?`), from, to).Scan(&last)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return Ticket{}, nil, fmt.Errorf("outbox: enqueue: %w", err)
		}
		if last == 0 || !now.Before(fromNanos(last).Add(o.cfg.window)) {
			return Ticket{}, nil, reject(ErrOutsideWindow, "", errcodes.ReEngagement, 0)
		}
	}

	// Capacity and the estimate.
	if laneDepth >= o.cfg.laneCapacity {
		return Ticket{}, nil, reject(ErrQueueFull, "lane", 0, time.Duration(laneDepth)*o.cfg.policy.Interval)
	}
	senderDepth, total, err := o.liveDepth(ctx, tx, now, from)
	if err != nil {
		return Ticket{}, nil, fmt.Errorf("outbox: enqueue: %w", err)
	}
	numberWait := time.Duration(senderDepth) * time.Second / time.Duration(o.cfg.mps)
	if total >= o.cfg.capacity {
		return Ticket{}, nil, reject(ErrQueueFull, "queue", 0, numberWait)
	}
	pairWait := time.Duration(0)
	if to != "" {
		pairWait = time.Duration(laneDepth) * o.cfg.policy.Interval
	}
	est := now.Add(max(pairWait, numberWait))
	if !m.ExpiresAt.IsZero() && est.After(m.ExpiresAt) {
		if pairWait >= numberWait {
			return Ticket{}, nil, reject(ErrExpired, "", errcodes.PairRateLimit, pairWait)
		}
		return Ticket{}, nil, reject(ErrExpired, "", errcodes.ThroughputLimit, numberWait)
	}

	body, err := json.Marshal(m)
	if err != nil {
		return Ticket{}, nil, fmt.Errorf("outbox: enqueue: encoding the message: %w", err)
	}
	res, err := tx.ExecContext(ctx, o.q(`INSERT INTO outbox_items (ikey, seq, lane, sender, recipient, kind, message, state, enqueued_at, due_at, expires_at, state_at)
		VALUES (?, 0, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?) ON CONFLICT (ikey) DO NOTHING`),
		key, lane, from, to, string(m.Kind()), string(body), nanos(now), nanos(now), nanos(m.ExpiresAt), nanos(now))
	if err != nil {
		return Ticket{}, nil, fmt.Errorf("outbox: enqueue: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		// Another worker stored the same key meanwhile.
		return Ticket{Key: key, State: StateQueued, Existing: true}, nil, nil
	}
	evs := events(now, StateQueued, "", key)
	o.countEnqueued(from)
	return Ticket{Key: key, State: StateQueued, EnqueuedAt: now, EstimatedAt: est, ExpiresAt: m.ExpiresAt}, evs, nil
}

// liveDepth returns the live items of business number from and of the
// whole queue, recounted at most every liveRefresh (this process's
// enqueues since are added; items finished since are not subtracted, so
// the figures err high).
func (o *Outbox) liveDepth(ctx context.Context, ex execer, now time.Time, from string) (int, int, error) {
	o.liveMu.Lock()
	defer o.liveMu.Unlock()
	if o.live.bySender == nil || now.Sub(o.live.at) >= liveRefresh || now.Before(o.live.at) {
		rows, err := ex.QueryContext(ctx, `SELECT sender, COUNT(*) FROM outbox_items WHERE state IN ('queued', 'sending') GROUP BY sender`)
		if err != nil {
			return 0, 0, err
		}
		defer rows.Close()
		by, total := map[string]int{}, 0
		for rows.Next() {
			var s string
			var n int
			if err := rows.Scan(&s, &n); err != nil {
				return 0, 0, err
			}
			by[s] = n
			total += n
		}
		if err := rows.Err(); err != nil {
			return 0, 0, err
		}
		o.live = liveCount{at: now, bySender: by, total: total}
	}
	return o.live.bySender[from], o.live.total, nil
}

func (o *Outbox) countEnqueued(from string) {
	o.liveMu.Lock()
	defer o.liveMu.Unlock()
	if o.live.bySender != nil {
		o.live.bySender[from]++
		o.live.total++
	}
}
