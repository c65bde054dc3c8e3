package outbox

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/phone"
	"github.com/wapace/wapace/pairlimit"
)

// laneLockSpace is the first key of the Postgres advisory locks that
// serialise Enqueue per lane (the second is the hash of the lane); the
// two-key space never meets Open's one-key lock.
const laneLockSpace = 727717

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
// The message's idempotency key is its own or a generated one. A key
// names one message: enqueueing the same message again (same sender and
// recipient, same content; its deadline aside) stores nothing and returns
// the existing item's ticket (Existing set), while another message under
// a stored key stores nothing and fails with an error matching
// ErrIdempotencyConflict.
//
// Concurrent calls share transactions (group commit): one of the callers
// stores the calls waiting at that moment in one transaction, each decided
// as if it were alone after the ones before it (a rejected call stores
// nothing and leaves the others stored). Every call returns only once the
// transaction holding its item has committed, so a returned item is
// durable and visible to Run. A call whose ctx ends returns either its
// stored item, or ctx's error having stored nothing: while it waits (for
// its turn, or for a connection) it leaves at once; once its transaction
// has begun it waits for the outcome, and its commit is not cut short.
//
// A lane sends its items in the order they were stored: never an item
// before one whose Enqueue returned before its own Enqueue began (so one
// goroutine's items go in its order), across Outboxes sharing a Postgres
// too. Calls to one lane that overlap in time have no promised order.
func (o *Outbox) Enqueue(ctx context.Context, from string, m cloudapi.Message) (Ticket, error) {
	if o.isClosed() {
		return Ticket{}, ErrClosed
	}
	fresh := m.IdempotencyKey == ""
	lane, to, err := o.check(from, &m)
	if err != nil {
		return Ticket{}, err
	}
	if err := ctx.Err(); err != nil {
		return Ticket{}, err
	}
	return o.enqueueGrouped(ctx, from, m, lane, to, fresh)
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
	fresh := m.IdempotencyKey == ""
	lane, to, err := o.check(from, &m)
	if err != nil {
		return Ticket{}, nil, err
	}
	c := &enqCall{from: from, m: m, lane: lane, to: to, fresh: fresh}
	if err := o.storeAll(ctx, tx, []*enqCall{c}, false); err != nil {
		return Ticket{}, nil, err
	}
	return c.t, c.evs, c.err
}

// check validates from and m without the database, gives m its
// idempotency key if it has none, and returns the lane and the
// recipient's digits.
func (o *Outbox) check(from string, m *cloudapi.Message) (lane, to string, err error) {
	if err := m.Validate(); err != nil {
		return "", "", err
	}
	lane, to, err = laneOf(from, *m)
	if err != nil {
		return "", "", err
	}
	if m.IdempotencyKey == "" {
		m.IdempotencyKey = o.cfg.newKey()
	}
	if key := m.IdempotencyKey; baseKey(key) != key {
		// The outbox names resends K#r1, K#r2, ...: a caller's key of that
		// form would be taken for a resend of K (by the Client's memory of
		// sent keys and by Reconcile).
		return "", "", &cloudapi.ValidationError{Field: "idempotency_key", Reason: `ends in "#r" and digits, which the outbox keeps for resends`}
	}
	return lane, to, nil
}

// storeAll stores the checked calls in tx, in order, each as if it were
// alone in its own transaction after the ones before it: it is stored
// (c.t, c.evs), or rejected storing nothing (c.err, a *RejectError), or
// an existing key's ticket (c.t, no events); with try, a call whose lane
// another transaction has locked (Postgres) is left to be stored alone
// (c.solo). A database error is returned as such: tx must then be rolled
// back, and nothing of it is stored.
func (o *Outbox) storeAll(ctx context.Context, tx *sql.Tx, calls []*enqCall, try bool) error {
	now := o.cfg.clock.Now()
	if o.d.postgres {
		var err error
		if calls, err = o.lockLanes(ctx, tx, calls, try); err != nil {
			return err
		}
	}
	if len(calls) == 0 {
		return nil
	}

	// What is stored already: the keys, and the depth of the lanes. (One
	// query for the whole batch.)
	keys := make([]string, 0, len(calls))
	lanes := make([]string, 0, len(calls))
	senders := make([]string, 0, len(calls)) // each lane's business number, as given
	seen := map[string]bool{}
	for _, c := range calls {
		if !c.fresh || o.d.postgres {
			keys = append(keys, c.m.IdempotencyKey)
		}
		if !seen[c.lane] {
			seen[c.lane] = true
			lanes, senders = append(lanes, c.lane), append(senders, c.from)
		}
	}
	stored := map[string]Ticket{}
	prints := map[string]*msgPrint{} // key -> the stored message's fingerprint
	depth := map[string]int{}
	laneNo := map[string]int64{} // SQLite: the lanes numbered already
	if err := o.lookup(ctx, tx, keys, lanes, senders, stored, prints, depth, laneNo); err != nil {
		return fmt.Errorf("outbox: enqueue: %w", err)
	}
	// The live items per number and in all.
	live, total, err := o.liveDepth(ctx, tx, now)
	if err != nil {
		return fmt.Errorf("outbox: enqueue: %w", err)
	}

	// Decide each in turn, counting the ones before it.
	var ins []*enqCall
	var bodies []string
	bySender := map[string]int{}
	for _, c := range calls {
		key := c.m.IdempotencyKey
		body, err := json.Marshal(c.m)
		if err != nil {
			return fmt.Errorf("outbox: enqueue: encoding the message: %w", err)
		}
		fp := &msgPrint{lane: c.lane, body: body}
		if t, ok := stored[key]; ok {
			if !fp.same(prints[key]) {
				c.err = conflict(key)
				continue
			}
			c.t = t
			continue
		}
		m := c.m
		if m.ExpiresAt.IsZero() && m.Kind() == cloudapi.KindTemplate && m.Category == cloudapi.CategoryAuthentication {
			m.ExpiresAt = now.Add(cloudapi.AuthenticationTTL)
		}
		est, err := o.decide(ctx, tx, now, c.from, m, c.lane, c.to, depth[c.lane], live[c.from]+bySender[c.from], total+len(ins))
		var re *RejectError
		if errors.As(err, &re) {
			c.err = err
			continue
		}
		if err != nil {
			return fmt.Errorf("outbox: enqueue: %w", err)
		}
		if m.ExpiresAt != c.m.ExpiresAt {
			if body, err = json.Marshal(m); err != nil {
				return fmt.Errorf("outbox: enqueue: encoding the message: %w", err)
			}
		}
		c.t = Ticket{Key: key, State: StateQueued, EnqueuedAt: now, EstimatedAt: est, ExpiresAt: m.ExpiresAt}
		stored[key] = Ticket{Key: key, State: StateQueued, Existing: true, EnqueuedAt: now, ExpiresAt: m.ExpiresAt}
		prints[key] = fp
		depth[c.lane]++
		bySender[c.from]++
		ins = append(ins, c)
		bodies = append(bodies, string(body))
	}
	if len(ins) == 0 {
		return nil
	}

	// SQLite: number the new lanes, in the order of their first items.
	if !o.d.postgres {
		if err := o.numberLanes(ctx, tx, ins, laneNo); err != nil {
			return fmt.Errorf("outbox: enqueue: %w", err)
		}
	}

	// A few statements insert them all, in order (ids, hence FIFO order
	// in a lane, follow it).
	keys = keys[:0]
	done := 0
	for len(ins[done:]) > 0 {
		n := o.insertChunk(len(ins[done:]))
		args := make([]any, 0, 12*n)
		for i, c := range ins[done : done+n] {
			args = append(args, c.m.IdempotencyKey, c.lane, c.from, c.to, string(c.m.Kind()), bodies[done+i], nanos(now), nanos(now),
				nanos(c.t.ExpiresAt), nanos(now), c.burst)
			if !o.d.postgres {
				args = append(args, laneNo[c.lane])
			}
		}
		done += n
		q := insertSQL(n)
		if o.d.postgres {
			q = pgInsertSQL(n)
		}
		ks, err := o.queryKeys(ctx, tx, q, args...)
		if err != nil {
			return fmt.Errorf("outbox: enqueue: %w", err)
		}
		keys = append(keys, ks...)
	}
	inserted := make(map[string]bool, len(keys))
	for _, k := range keys {
		inserted[k] = true
	}
	if err := o.storeTraces(ctx, tx, ins, inserted); err != nil {
		return fmt.Errorf("outbox: enqueue: storing trace context: %w", err)
	}
	// Count the new items (the triggers count changes of state only).
	perSender := map[string]int{}
	for _, c := range ins {
		if inserted[c.m.IdempotencyKey] {
			perSender[c.from]++
		}
	}
	for sender, n := range perSender {
		if err := o.countInserted(ctx, tx, sender, n); err != nil {
			return fmt.Errorf("outbox: enqueue: %w", err)
		}
	}
	var lost []any
	for _, c := range ins {
		key := c.m.IdempotencyKey
		if !inserted[key] {
			// Another worker stored the same key meanwhile (its row is
			// committed: the insert waited for it).
			lost = append(lost, key)
			continue
		}
		c.evs = events(now, StateQueued, "", key)
		o.countEnqueued(c.from)
	}
	if len(lost) == 0 {
		return nil
	}
	// The calls of those keys (the one that tried to insert, and any of
	// this batch that took its ticket) get the stored item's ticket.
	lostKeys := make([]string, len(lost))
	for i, k := range lost {
		lostKeys[i] = k.(string)
	}
	rows, err := o.query(ctx, tx, `SELECT ikey, state, enqueued_at, expires_at, lane, message FROM outbox_items WHERE ikey `+o.d.inList("text"), listArg(o.d, lostKeys))
	if err != nil {
		return fmt.Errorf("outbox: enqueue: %w", err)
	}
	theirs := map[string]Ticket{}
	theirPrints := map[string]string{}
	for rows.Next() {
		var key, st, lane, body string
		var enq, exp int64
		if err := rows.Scan(&key, &st, &enq, &exp, &lane, &body); err != nil {
			rows.Close()
			return fmt.Errorf("outbox: enqueue: %w", err)
		}
		s, _ := parseState(st)
		theirs[key] = Ticket{Key: key, State: s, Existing: true, EnqueuedAt: fromNanos(enq), ExpiresAt: fromNanos(exp)}
		theirPrints[key] = fingerprint(lane, []byte(body))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("outbox: enqueue: %w", err)
	}
	rows.Close()
	for _, k := range lost {
		key := k.(string)
		t, ok := theirs[key]
		if !ok {
			t = Ticket{Key: key, State: StateQueued, Existing: true}
		}
		for _, c := range calls {
			if c.m.IdempotencyKey == key && c.err == nil && !c.solo {
				if p, ok := theirPrints[key]; ok && p != prints[key].String() {
					// This batch's message under the key (prints holds
					// it) is not the one stored.
					c.t, c.err = Ticket{}, conflict(key)
					continue
				}
				c.t = t
			}
		}
	}
	return nil
}

// lockLanes (Postgres) takes the lock of each call's lane until tx ends:
// at READ COMMITTED two transactions could both count a lane under its
// capacity and both insert, so the count and the insert are serialised
// per lane (lanes whose names hash alike share a lock, which only
// serialises them). With try, a lock held by another transaction is not
// waited for: its calls are marked solo and left out of the result.
func (o *Outbox) lockLanes(ctx context.Context, tx *sql.Tx, calls []*enqCall, try bool) ([]*enqCall, error) {
	if !try {
		for _, c := range calls {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, laneLockSpace, c.lane); err != nil {
				return nil, fmt.Errorf("outbox: enqueue: %w", err)
			}
		}
		return calls, nil
	}
	// A batch shares one transaction: waiting for one lane would hold
	// every other call of the batch behind that lane's holder.
	var lanes []string
	seen := map[string]bool{}
	for _, c := range calls {
		if !seen[c.lane] {
			seen[c.lane] = true
			lanes = append(lanes, c.lane)
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT l, pg_try_advisory_xact_lock($1, hashtext(l)) FROM unnest($2::text[]) AS l`, laneLockSpace, lanes)
	if err != nil {
		return nil, fmt.Errorf("outbox: enqueue: %w", err)
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var l string
		var ok bool
		if err := rows.Scan(&l, &ok); err != nil {
			return nil, fmt.Errorf("outbox: enqueue: %w", err)
		}
		got[l] = ok
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("outbox: enqueue: %w", err)
	}
	var locked []*enqCall
	for _, c := range calls {
		if got[c.lane] {
			locked = append(locked, c)
		} else {
			c.solo = true
		}
	}
	return locked, nil
}

// decide rejects m (a *RejectError) or returns its estimated send
// instant, given its lane's depth and the items of its number and of the
// queue stored before it in this transaction (not yet in liveDepth's
// counts).
func (o *Outbox) decide(ctx context.Context, tx *sql.Tx, now time.Time, from string, m cloudapi.Message, lane, to string, laneDepth, senderDepth, total int) (time.Time, error) {
	key := m.IdempotencyKey
	reject := func(reason error, full string, code errcodes.Code, wait time.Duration) error {
		hold := errcodes.HoldNone
		if code != 0 {
			hold = code.Class().Hold
		}
		bp := &cloudapi.BackpressureError{Limit: hold, Code: code, Wait: wait,
			ExpiresAt: m.ExpiresAt, IdempotencyKey: key}
		return &RejectError{BackpressureError: bp, Reason: reason, Full: full}
	}
	if !m.ExpiresAt.IsZero() && !m.ExpiresAt.After(now) {
		return time.Time{}, reject(ErrExpired, "", 0, 0)
	}
	if o.cfg.window > 0 && freeForm(m.Kind()) {
		var last int64
		err := o.queryRow(ctx, tx, sqlWindow, from, to).Scan(&last)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return time.Time{}, err
		}
		if last == 0 || !now.Before(fromNanos(last).Add(o.cfg.window)) {
			return time.Time{}, reject(ErrOutsideWindow, "", errcodes.ReEngagement, 0)
		}
	}

	// Capacity and the estimate, with the limits of the Outbox's Client.
	policy, mps := o.limits(from)
	if laneDepth >= o.cfg.laneCapacity {
		return time.Time{}, reject(ErrQueueFull, "lane", 0, time.Duration(laneDepth)*policy.Interval)
	}
	numberWait := time.Duration(senderDepth) * time.Second / time.Duration(max(mps, 1))
	if total >= o.cfg.capacity {
		return time.Time{}, reject(ErrQueueFull, "queue", 0, numberWait)
	}
	pairWait := time.Duration(0)
	if to != "" {
		pairWait = time.Duration(laneDepth) * policy.Interval
	}
	est := now.Add(max(pairWait, numberWait))
	if !m.ExpiresAt.IsZero() && est.After(m.ExpiresAt) {
		if pairWait >= numberWait {
			return time.Time{}, reject(ErrExpired, "", errcodes.HoldPair.Code(), pairWait)
		}
		return time.Time{}, reject(ErrExpired, "", errcodes.HoldPhoneNumber.Code(), numberWait)
	}
	return est, nil
}

// numberLanes (SQLite) gives the lanes of ins that have no number in
// laneNo one (outbox_lanes), in the order of their first items, and adds
// it to laneNo.
func (o *Outbox) numberLanes(ctx context.Context, tx *sql.Tx, ins []*enqCall, laneNo map[string]int64) error {
	var lanes []string
	for _, c := range ins {
		if _, ok := laneNo[c.lane]; !ok {
			laneNo[c.lane] = 0
			lanes = append(lanes, c.lane)
		}
	}
	if len(lanes) == 0 {
		return nil
	}
	// One statement for them all (a statement per lane cost a tenth of a
	// campaign's enqueue).
	list, err := json.Marshal(lanes)
	if err != nil {
		return err
	}
	rows, err := o.query(ctx, tx, sqlNewLanes, string(list))
	if err != nil {
		return err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int64
		var lane string
		if err := rows.Scan(&id, &lane); err != nil {
			return err
		}
		laneNo[lane] = id
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n != len(lanes) {
		return fmt.Errorf("numbered %d of %d new lanes", n, len(lanes))
	}
	return nil
}

// lookup fills stored and prints with the items of keys already stored,
// depth with the live items of lanes (senders[i] is the business number
// of lanes[i]), and (SQLite) laneNo with the numbers of the lanes
// numbered already.
func (o *Outbox) lookup(ctx context.Context, tx *sql.Tx, keys, lanes, senders []string, stored map[string]Ticket, prints map[string]*msgPrint, depth map[string]int, laneNo map[string]int64) error {
	if !o.d.postgres && len(keys)+len(lanes) >= lookupBatch {
		return o.lookupMany(ctx, tx, keys, lanes, senders, stored, prints, depth, laneNo)
	}
	if !o.d.postgres {
		// SQLite: a prepared statement per key and per lane.
		for _, k := range keys {
			var key, st, lane, body string
			var enq, exp int64
			err := o.queryRow(ctx, tx, sqlLookupKey, k).Scan(&key, &st, &enq, &exp, &lane, &body)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			s, _ := parseState(st)
			stored[key] = Ticket{Key: key, State: s, Existing: true, EnqueuedAt: fromNanos(enq), ExpiresAt: fromNanos(exp)}
			prints[key] = &msgPrint{lane: lane, body: []byte(body)}
		}
		for i, l := range lanes {
			var id int64
			var n int
			err := o.queryRow(ctx, tx, sqlLaneDepth, senders[i], l).Scan(&id, &n)
			if errors.Is(err, sql.ErrNoRows) {
				continue // a new lane: empty, numbered if an item is stored
			}
			if err != nil {
				return err
			}
			depth[l], laneNo[l] = n, id
		}
		return nil
	}
	rows, err := o.query(ctx, tx, lookupSQL(len(keys), len(lanes)), append(anys(keys), anys(lanes)...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var kind int
		var name, st, lane, body string
		var n, exp int64
		if err := rows.Scan(&kind, &name, &st, &n, &exp, &lane, &body); err != nil {
			return err
		}
		if kind == 1 {
			depth[name] = int(n)
			continue
		}
		s, _ := parseState(st)
		stored[name] = Ticket{Key: name, State: s, Existing: true, EnqueuedAt: fromNanos(n), ExpiresAt: fromNanos(exp)}
		prints[name] = &msgPrint{lane: lane, body: []byte(body)}
	}
	return rows.Err()
}

// lookupBatch is the number of keys and lanes from which lookup reads
// them with two statements (lookupMany) rather than one statement each:
// a statement costs more around it (database/sql, the driver) than in
// SQLite for one key, while a list in JSON costs its encoding.
const lookupBatch = 8

// lookupMany is lookup with SQLite for many keys and lanes: two
// statements, the keys and the lanes listed in JSON.
func (o *Outbox) lookupMany(ctx context.Context, tx *sql.Tx, keys, lanes, senders []string, stored map[string]Ticket, prints map[string]*msgPrint, depth map[string]int, laneNo map[string]int64) error {
	if len(keys) > 0 {
		list, err := json.Marshal(keys)
		if err != nil {
			return err
		}
		rows, err := o.query(ctx, tx, sqlLookupKeys, string(list))
		if err != nil {
			return err
		}
		for rows.Next() {
			var key, st, lane, body string
			var enq, exp int64
			if err := rows.Scan(&key, &st, &enq, &exp, &lane, &body); err != nil {
				rows.Close()
				return err
			}
			s, _ := parseState(st)
			stored[key] = Ticket{Key: key, State: s, Existing: true, EnqueuedAt: fromNanos(enq), ExpiresAt: fromNanos(exp)}
			prints[key] = &msgPrint{lane: lane, body: []byte(body)}
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return err
		}
		rows.Close()
	}
	if len(lanes) == 0 {
		return nil
	}
	bySender := make(map[string]string, len(lanes)) // lane -> its number's ID
	for i, l := range lanes {
		bySender[l] = senders[i]
	}
	list, err := json.Marshal(bySender)
	if err != nil {
		return err
	}
	rows, err := o.query(ctx, tx, sqlLaneDepths, string(list))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var lane string
		var id int64
		var n int
		if err := rows.Scan(&lane, &id, &n); err != nil {
			return err
		}
		depth[lane], laneNo[lane] = n, id
	}
	return rows.Err()
}

// The statements of lookup and numberLanes with SQLite. sqlLaneDepth
// reads a lane's number and its live items (no row: a lane never
// numbered), its arguments the lane's sender and the lane.
var (
	sqlLookupKey = `SELECT ikey, state, enqueued_at, expires_at, lane, message FROM outbox_items WHERE ikey = ?`
	sqlLaneDepth = `SELECT l.id, (SELECT COUNT(*) FROM outbox_items i WHERE i.sender = ? AND i.lane_no = l.id AND i.state IN ('queued', 'sending'))
		FROM outbox_lanes l WHERE l.lane = ?`
	// lookupMany's: the keys as a JSON array; the lanes as a JSON object,
	// each lane's business number its value (lanes never numbered: no row).
	sqlLookupKeys = `SELECT ikey, state, enqueued_at, expires_at, lane, message FROM outbox_items WHERE ikey IN (SELECT value FROM json_each(?))`
	sqlLaneDepths = `SELECT j.key, l.id, (SELECT COUNT(*) FROM outbox_items i WHERE i.sender = j.value AND i.lane_no = l.id AND i.state IN ('queued', 'sending'))
		FROM json_each(?) j JOIN outbox_lanes l ON l.lane = j.key`
	// (json_each reads the array in its order: so do the numbers.)
	sqlNewLanes = `INSERT OR FAIL INTO outbox_lanes (lane) SELECT value FROM json_each(?) RETURNING id, lane`
)

// lookupSQL finds which of keys keys are stored, and the live items of
// lanes lanes. (A list of placeholders: for one key, the commonest call,
// it parses faster than a JSON list.)
func lookupSQL(keys, lanes int) string {
	return `SELECT 0, ikey, state, enqueued_at, expires_at, lane, message FROM outbox_items WHERE ikey IN (` + repeatJoin("?", ", ", keys) + `)
		UNION ALL SELECT 1, lane, '', COUNT(*), 0, '', '' FROM outbox_items WHERE state IN ('queued', 'sending') AND lane IN (` + repeatJoin("?", ", ", lanes) + `) GROUP BY lane`
}

// maxInsert is the most items one INSERT statement stores.
const maxInsert = 256

// sqliteInserts are the sizes of SQLite's INSERT statements, largest
// first, each prepared once (stmtCache): a batch is stored by as many of
// the largest as fit, then the smaller ones. Not larger: modernc.org/sqlite
// binds a statement's n arguments in time proportional to n squared (it
// looks each one up in the list of all of them), which cost 15 µs per item
// in statements of 256 items (2,816 arguments); a statement of 16 costs
// well under 1 µs per item to bind.
var sqliteInserts = []int{16, 4, 1}

// insertChunk is how many of n items to store with the next INSERT.
func (o *Outbox) insertChunk(n int) int {
	if o.d.postgres {
		return min(n, maxInsert)
	}
	for _, k := range sqliteInserts {
		if n >= k {
			return k
		}
	}
	return n
}

// repeatJoin repeats s n times, separated by sep.
func repeatJoin(s, sep string, n int) string {
	return strings.TrimSuffix(strings.Repeat(s+sep, n), sep)
}

func anys[T any](vs []T) []any {
	as := make([]any, len(vs))
	for i, v := range vs {
		as[i] = v
	}
	return as
}

// liveRefresh is how often Enqueue rereads the counters of live items
// for its capacity check and estimate (a statement per call would cost a
// tenth of an Enqueue in a transaction of many).
const liveRefresh = 100 * time.Millisecond

// liveCount caches the live items per business number.
type liveCount struct {
	at       time.Time
	bySender map[string]int
	total    int
}

// liveDepth returns the live items per business number and of the whole
// queue, from the counters, reread at most every liveRefresh (this
// process's enqueues since are added; items finished since are not
// subtracted, so the figures err high). It returns a copy.
func (o *Outbox) liveDepth(ctx context.Context, ex execer, now time.Time) (map[string]int, int, error) {
	o.liveMu.Lock()
	defer o.liveMu.Unlock()
	if o.live.bySender == nil || now.Sub(o.live.at) >= liveRefresh || now.Before(o.live.at) {
		_, by, err := o.counts(ctx, ex)
		if err != nil {
			return nil, 0, err
		}
		total := 0
		for _, n := range by {
			total += n
		}
		o.live = liveCount{at: now, bySender: by, total: total}
	}
	return maps.Clone(o.live.bySender), o.live.total, nil
}

func (o *Outbox) countEnqueued(from string) {
	o.liveMu.Lock()
	defer o.liveMu.Unlock()
	if o.live.bySender != nil {
		o.live.bySender[from]++
		o.live.total++
	}
}

// insertSQL inserts n items (SQLite: each with its lane's number).
func insertSQL(n int) string {
	return `INSERT OR FAIL INTO outbox_items (ikey, seq, lane, sender, recipient, kind, message, state, enqueued_at, due_at, expires_at, state_at, burst, lane_no) VALUES ` +
		repeatJoin(`(?, 0, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)`, ", ", n) + ` ON CONFLICT (ikey) DO NOTHING RETURNING ikey`
}

// pgInsertSQL inserts n items (Postgres).
func pgInsertSQL(n int) string {
	return `INSERT INTO outbox_items (ikey, seq, lane, sender, recipient, kind, message, state, enqueued_at, due_at, expires_at, state_at, burst) VALUES ` +
		repeatJoin(`(?, 0, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?)`, ", ", n) + ` ON CONFLICT (ikey) DO NOTHING RETURNING ikey`
}

var sqlWindow = `SELECT last_inbound FROM outbox_windows WHERE sender = ? AND recipient = ?`

// fingerprint names a message for the idempotency check: its lane (the
// business number and the recipient, normalised) and its stored encoding
// less what is not content (the key, the recipient as spelled, the
// deadline, the category and service-window hints). A body that cannot be
// read is its own fingerprint.
func fingerprint(lane string, body []byte) string {
	var j map[string]json.RawMessage
	if json.Unmarshal(body, &j) != nil {
		return lane + "\x00" + string(body)
	}
	for _, k := range []string{"to", "idempotency_key", "expires_at", "category", "in_service_window"} {
		delete(j, k)
	}
	b, err := json.Marshal(j) // sorted keys, compacted values
	if err != nil {
		return lane + "\x00" + string(body)
	}
	return lane + "\x00" + string(b)
}

// msgPrint is a message's fingerprint, computed only when asked for: most
// keys are new, and need none.
type msgPrint struct {
	lane string
	body []byte // nil once fp is computed
	fp   string
}

// String returns the fingerprint.
func (p *msgPrint) String() string {
	if p.body != nil {
		p.fp, p.body = fingerprint(p.lane, p.body), nil
	}
	return p.fp
}

// same reports whether p and q name the same message (a nil q: none).
func (p *msgPrint) same(q *msgPrint) bool {
	if q == nil {
		return false
	}
	if p.body != nil && q.body != nil && p.lane == q.lane && bytes.Equal(p.body, q.body) {
		return true
	}
	return p.String() == q.String()
}

// conflict is Enqueue's error for a key stored for another message.
func conflict(key string) error { return &conflictError{key: key} }
