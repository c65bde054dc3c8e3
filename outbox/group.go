package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/wapace/wapace/cloudapi"
)

// maxGroup bounds the Enqueue calls stored in one shared transaction.
const maxGroup = 256

// group coalesces concurrent Enqueue calls into shared transactions
// (group commit), without a goroutine of its own: the first caller to
// find no leader leads; it stores the calls waiting then (its own first)
// in one transaction, commits, hands the lead to the oldest call still
// waiting, and releases the calls it stored. Every call returns only once
// the transaction holding its item has committed (or failed).
//
// A call rejected in a batch (a full lane, a deadline, the service
// window) stored nothing and leaves the batch intact: rejections are
// decided before anything is written. A database error in a batch rolls
// it back, and each of its calls is then stored in a transaction of its
// own, as if alone (their keys were fixed before the batch, so nothing
// can be stored twice).
type group struct {
	mu      sync.Mutex
	queue   []*enqCall // waiting for a batch, oldest first
	leading bool       // a call is leading a batch or has been handed the lead
}

// enqCall is one Enqueue call waiting in a group.
type enqCall struct {
	ctx      context.Context
	from     string
	m        cloudapi.Message
	lane, to string

	wake   chan bool // true: lead the next batch; false: the result is set
	taken  bool      // in a batch (group.mu)
	handed bool      // handed the lead (group.mu)

	// The result, set by the batch's leader before wake.
	t    Ticket
	evs  []Event
	err  error
	solo bool // store it alone, in a transaction of its own
}

// enqueueGrouped stores a checked message in a shared transaction.
func (o *Outbox) enqueueGrouped(ctx context.Context, from string, m cloudapi.Message, lane, to string) (Ticket, error) {
	c := &enqCall{ctx: ctx, from: from, m: m, lane: lane, to: to, wake: make(chan bool, 1)}
	g := &o.group
	g.mu.Lock()
	g.queue = append(g.queue, c)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if !lead {
		select {
		case lead = <-c.wake:
		case <-ctx.Done():
			g.mu.Lock()
			if !c.taken && !c.handed {
				// Not in any batch: leave, nothing stored.
				for i, q := range g.queue {
					if q == c {
						g.queue = append(g.queue[:i], g.queue[i+1:]...)
						break
					}
				}
				g.mu.Unlock()
				return Ticket{}, ctx.Err()
			}
			g.mu.Unlock()
			// In a batch (its outcome is on its way), or handed the
			// lead: wait for it.
			lead = <-c.wake
		}
	}
	if lead {
		o.leadBatch()
	}
	if c.solo {
		return o.enqueueAlone(ctx, c.from, c.m, c.lane, c.to)
	}
	if c.err != nil {
		return c.t, c.err
	}
	o.notify(c.evs)
	return c.t, nil
}

// leadBatch stores the calls at the head of the queue (the leader's own
// first) in one transaction, hands the lead on and releases them.
func (o *Outbox) leadBatch() {
	g := &o.group
	g.mu.Lock()
	n := min(len(g.queue), maxGroup)
	batch := make([]*enqCall, n)
	copy(batch, g.queue)
	g.queue = append(g.queue[:0:0], g.queue[n:]...)
	for _, c := range batch {
		c.taken = true
	}
	g.mu.Unlock()

	finished := false
	defer func() {
		if !finished {
			// storeBatch panicked: the calls waiting must not wait for
			// ever, nor take a zero ticket for a stored item.
			for _, c := range batch {
				c.t, c.evs, c.err, c.solo = Ticket{}, nil, errBatchAborted, false
			}
		}
		g.mu.Lock()
		if len(g.queue) > 0 {
			next := g.queue[0]
			next.handed = true
			next.wake <- true
		} else {
			g.leading = false
		}
		g.mu.Unlock()
		for _, c := range batch[1:] {
			c.wake <- false
		}
	}()
	committed := o.storeBatch(batch)
	finished = true
	if committed {
		o.poke()
	}
}

// errBatchAborted is the error of the calls of a batch whose leader
// panicked (nothing of the batch was committed).
var errBatchAborted = errors.New("outbox: enqueue: the shared transaction was abandoned")

// storeBatch stores batch in one transaction and sets each call's
// result. It reports whether it committed anything.
func (o *Outbox) storeBatch(batch []*enqCall) bool {
	// The calls share the transaction: none of their contexts may end it
	// (a call whose context ends before its turn is skipped).
	ctx := context.WithoutCancel(batch[0].ctx)
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		for _, c := range batch {
			c.err = fmt.Errorf("outbox: enqueue: %w", err)
		}
		return false
	}
	defer tx.Rollback()
	var live []*enqCall
	for _, c := range batch {
		if c.err = c.ctx.Err(); c.err == nil {
			live = append(live, c)
		}
	}
	if err := o.storeAll(ctx, tx, live, o.d.postgres); err != nil {
		// The transaction may be unusable (Postgres aborts it): roll
		// back and store every call alone.
		for _, c := range live {
			c.t, c.evs, c.err, c.solo = Ticket{}, nil, nil, true
		}
		return false
	}
	var stored []*enqCall
	for _, c := range live {
		if len(c.evs) > 0 {
			stored = append(stored, c)
		}
	}
	if len(stored) == 0 {
		return false
	}
	if err := tx.Commit(); err != nil {
		for _, c := range stored {
			c.t, c.evs, c.err = Ticket{}, nil, fmt.Errorf("outbox: enqueue: %w", err)
		}
		return false
	}
	return true
}

// enqueueAlone stores a checked message in a transaction of its own.
func (o *Outbox) enqueueAlone(ctx context.Context, from string, m cloudapi.Message, lane, to string) (Ticket, error) {
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return Ticket{}, fmt.Errorf("outbox: enqueue: %w", err)
	}
	defer tx.Rollback()
	c := &enqCall{from: from, m: m, lane: lane, to: to}
	if err := o.storeAll(ctx, tx, []*enqCall{c}, false); err != nil {
		return Ticket{}, err
	}
	t, evs := c.t, c.evs
	if c.err != nil || len(evs) == 0 {
		return t, c.err // rejected, or an existing key: nothing to commit
	}
	if err := tx.Commit(); err != nil {
		return Ticket{}, fmt.Errorf("outbox: enqueue: %w", err)
	}
	o.poke()
	o.notify(evs)
	return t, nil
}
