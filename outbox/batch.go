package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/internal/clockwait"
	"github.com/wapace/wapace/pairlimit"
)

// EnqueueResult is the outcome of one message of EnqueueMany: its ticket,
// or the error that rejected it (storing nothing of it), as Enqueue would
// have returned them.
type EnqueueResult struct {
	Ticket Ticket
	Err    error
}

// EnqueueMany stores msgs, to be sent from business number from, in one
// transaction of its own, each decided as Enqueue would decide it alone
// after the ones before it: a message rejected (invalid, too late, a full
// queue or lane, outside the window) stores nothing and leaves the others
// stored, and an idempotency key already stored returns its ticket. The
// results are in msgs' order; lanes send their items in that order. The
// error is for the batch as a whole (a database error, ctx's end before
// the commit, a closed Outbox): nothing of it was stored.
//
// It is the way to enqueue a list (a campaign) without a transaction of
// the caller's: one commit for the batch. Keep batches to a few thousand
// messages: the transaction holds SQLite's write lock while it stores
// them.
func (o *Outbox) EnqueueMany(ctx context.Context, from string, msgs ...cloudapi.Message) ([]EnqueueResult, error) {
	if o.isClosed() {
		return nil, ErrClosed
	}
	res := make([]EnqueueResult, len(msgs))
	var calls []*enqCall
	var at []int // calls[j] is msgs[at[j]]
	for i, m := range msgs {
		fresh := m.IdempotencyKey == ""
		lane, to, err := o.check(from, &m)
		if err != nil {
			res[i].Err = err
			continue
		}
		calls, at = append(calls, &enqCall{from: from, m: m, lane: lane, to: to, fresh: fresh}), append(at, i)
	}
	if len(calls) == 0 {
		return res, ctx.Err()
	}
	if err := o.storeOwn(ctx, calls); err != nil {
		return nil, err
	}
	var evs []Event
	for j, c := range calls {
		res[at[j]] = EnqueueResult{Ticket: c.t, Err: c.err}
		evs = append(evs, c.evs...)
	}
	o.notify(evs)
	return res, nil
}

// EnqueueBurst stores msgs, a multi-bubble reply to one recipient, as one
// unit: atomically (all of them or none), sent back to back as one burst
// of the pair (cloudapi.Client.SendBurst: owing len(msgs) x the pair's
// interval afterwards, not an interval between bubbles), in FIFO order
// with the rest of its lane. The burst is rejected whole, storing
// nothing, if any message would be rejected alone (see Enqueue), if the
// messages go to different recipients or are not all sendable in a burst
// (read receipts), or if there are more than the pair policy's burst
// (pairlimit.ErrBurstTooLarge). Enqueueing the same burst again (the same
// idempotency keys) stores nothing and returns the stored tickets
// (Existing set); a burst only some of whose keys are stored is refused.
//
// If a bubble fails when sent, the bubbles after it are not sent (the
// user never sees a reply with a hole): they fail with it, or go back to
// the queue with it when it does.
func (o *Outbox) EnqueueBurst(ctx context.Context, from string, msgs ...cloudapi.Message) ([]Ticket, error) {
	if o.isClosed() {
		return nil, ErrClosed
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	if pol, _ := o.limits(from); len(msgs) > pol.Burst {
		return nil, fmt.Errorf("outbox: burst of %d messages: %w (%d)", len(msgs), pairlimit.ErrBurstTooLarge, pol.Burst)
	}
	calls := make([]*enqCall, len(msgs))
	for i, m := range msgs {
		if m.Kind() == cloudapi.KindRead {
			return nil, &cloudapi.ValidationError{Field: "messages", Reason: "a read receipt cannot be part of a burst"}
		}
		fresh := m.IdempotencyKey == ""
		lane, to, err := o.check(from, &m)
		if err != nil {
			return nil, err
		}
		if i > 0 && lane != calls[0].lane {
			return nil, &cloudapi.ValidationError{Field: "to", Reason: "the messages of a burst must all go to one recipient"}
		}
		calls[i] = &enqCall{from: from, m: m, lane: lane, to: to, fresh: fresh}
	}
	seen := map[string]bool{}
	for _, c := range calls {
		c.burst = calls[0].m.IdempotencyKey
		if seen[c.m.IdempotencyKey] {
			return nil, &cloudapi.ValidationError{Field: "idempotency_key", Reason: "repeated within the burst"}
		}
		seen[c.m.IdempotencyKey] = true
	}
	if err := o.storeOwnAll(ctx, calls); err != nil {
		return nil, err
	}
	ts := make([]Ticket, len(calls))
	var evs []Event
	for i, c := range calls {
		ts[i] = c.t
		evs = append(evs, c.evs...)
	}
	o.notify(evs)
	return ts, nil
}

// errPartialBurst is storeOwnAll's error for a burst only some of whose
// keys are stored.
var errPartialBurst = errors.New("outbox: burst: some of its idempotency keys are stored already, not all")

// storeOwn stores calls in one transaction of the Outbox's own (each
// decided alone, see storeAll) and commits it.
func (o *Outbox) storeOwn(ctx context.Context, calls []*enqCall) error {
	return o.inOwnTx(ctx, calls, func() error { return nil })
}

// storeOwnAll stores calls all or none: a rejected call rejects them all
// (its error is returned); calls whose keys are all stored return their
// tickets, storing nothing.
func (o *Outbox) storeOwnAll(ctx context.Context, calls []*enqCall) error {
	return o.inOwnTx(ctx, calls, func() error {
		existing := 0
		for _, c := range calls {
			if c.err != nil {
				return c.err
			}
			if c.t.Existing {
				existing++
			}
		}
		if existing > 0 && existing < len(calls) {
			return errPartialBurst
		}
		return nil
	})
}

// inOwnTx stores calls in a transaction, asks decide whether to commit
// (an error rolls back and is returned), and commits. The transaction is
// begun without ctx, so that its commit cannot be cut short (see
// enqueueAlone); ctx bounds the wait for the connection and the
// statements.
func (o *Outbox) inOwnTx(ctx context.Context, calls []*enqCall, decide func() error) error {
	conn, err := o.db.Conn(ctx)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return o.enqueueErr(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return o.enqueueErr(err)
	}
	defer tx.Rollback()
	if err := o.storeAll(ctx, tx, calls, false); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return err
	}
	if err := decide(); err != nil {
		for _, c := range calls {
			c.evs = nil
		}
		return err
	}
	stored := false
	for _, c := range calls {
		stored = stored || len(c.evs) > 0
	}
	if !stored {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("outbox: enqueue: %w", err)
	}
	o.poke()
	return nil
}

// Drain waits until no item is queued or sending (every item enqueued so
// far has reached a final state), and returns nil then, or ctx's error
// when it ends first. It reads the counters only: it costs the same with
// a million items queued. It wakes on every transition this Outbox
// records and, for items that other processes move, checks again at
// least every second on the Outbox's clock (WithIdleWake, if shorter).
// Drain does not dispatch: a Run must be going, here or in another
// process.
func (o *Outbox) Drain(ctx context.Context) error {
	if o.isClosed() {
		return ErrClosed
	}
	every := time.Second
	if o.cfg.idleWake > 0 && o.cfg.idleWake < every {
		every = o.cfg.idleWake
	}
	for {
		wctx, cancel := context.WithCancel(ctx)
		o.addWaiter(&cancel)
		counts, _, err := o.counts(ctx, o.db)
		if err == nil && counts[StateQueued]+counts[StateSending] == 0 {
			o.removeWaiter(&cancel)
			cancel()
			return nil
		}
		if err != nil {
			o.removeWaiter(&cancel)
			cancel()
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if o.isClosed() {
				return ErrClosed
			}
			return fmt.Errorf("outbox: drain: %w", err)
		}
		_ = clockwait.Sleep(wctx, o.cfg.clock, every)
		o.removeWaiter(&cancel)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func (o *Outbox) addWaiter(w *context.CancelFunc) {
	o.waitMu.Lock()
	defer o.waitMu.Unlock()
	if o.waiters == nil {
		o.waiters = map[*context.CancelFunc]bool{}
	}
	o.waiters[w] = true
}

func (o *Outbox) removeWaiter(w *context.CancelFunc) {
	o.waitMu.Lock()
	defer o.waitMu.Unlock()
	delete(o.waiters, w)
}

// wakeWaiters ends the waits of Drain calls: something changed.
func (o *Outbox) wakeWaiters() {
	o.waitMu.Lock()
	defer o.waitMu.Unlock()
	for w := range o.waiters {
		(*w)()
	}
}
