package outbox

import (
	"context"
	"database/sql"
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
// the transaction holding its item has committed (or failed). A call
// whose ctx ends before its transaction begins (waiting for its turn, or
// in a batch whose leader waits for a connection) leaves, storing
// nothing; a leader whose ctx ends while it waits for a connection puts
// its batch back at the head of the queue and hands the lead on.
//
// A call rejected in a batch (a full lane, a deadline, the service
// window) stored nothing and leaves the batch intact: rejections are
// decided before anything is written. A database error in a batch (its
// commit's too) rolls it back, and each of its calls is then stored in a
// transaction of its own, as if alone (their keys were fixed before the
// batch, so nothing can be stored twice).
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
	burst    string // the key of its burst's first item ("" for none)

	wake   chan bool // true: lead the next batch; false: the result is set
	taken  bool      // in a batch (group.mu)
	begun  bool      // its batch's transaction has begun: it waits for the outcome (group.mu)
	left   bool      // its ctx ended before its batch's transaction began: it returned (group.mu)
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
			switch {
			case c.handed || c.begun:
				// Handed the lead, or in a transaction that has begun
				// (its outcome is on its way): wait for it.
				g.mu.Unlock()
				lead = <-c.wake
			case c.taken:
				// In a batch still waiting for the database: leave it,
				// nothing stored.
				c.left = true
				g.mu.Unlock()
				return Ticket{}, ctx.Err()
			default:
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
		}
	}
	if lead {
		o.leadBatch(c)
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

// handOn (group.mu held) hands the lead to the oldest call waiting, if
// any.
func (g *group) handOn() {
	if len(g.queue) > 0 {
		next := g.queue[0]
		next.handed = true
		next.wake <- true
	} else {
		g.leading = false
	}
}

// leadBatch stores the calls at the head of the queue (the leader's own,
// lc, first) in one transaction, hands the lead on and releases them. The
// wait for a connection ends with lc's ctx: lc then returns its error and
// the others go back to the head of the queue, under a new leader.
func (o *Outbox) leadBatch(lc *enqCall) {
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

	conn, err := o.db.Conn(lc.ctx)
	if err != nil {
		if lc.err = lc.ctx.Err(); lc.err == nil {
			lc.err = o.enqueueErr(err)
		}
		g.mu.Lock()
		var back []*enqCall
		for _, c := range batch[1:] {
			if !c.left {
				c.taken = false
				back = append(back, c)
			}
		}
		g.queue = append(back, g.queue...)
		g.handOn()
		g.mu.Unlock()
		return
	}
	defer conn.Close()

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
		g.handOn()
		g.mu.Unlock()
		for _, c := range batch[1:] {
			c.wake <- false // (a call that left never reads it)
		}
	}()
	committed := o.storeBatch(conn, batch)
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
func (o *Outbox) storeBatch(conn *sql.Conn, batch []*enqCall) bool {
	// The calls share the transaction: none of their contexts may end it
	// (a call whose context ends before the transaction begins leaves
	// it).
	ctx := context.WithoutCancel(batch[0].ctx)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		for _, c := range batch {
			c.err = o.enqueueErr(err)
		}
		return false
	}
	defer tx.Rollback()
	var live []*enqCall
	g := &o.group
	g.mu.Lock()
	for _, c := range batch {
		if c.left {
			continue
		}
		c.begun = true
		if c.err = c.ctx.Err(); c.err == nil {
			live = append(live, c)
		}
	}
	g.mu.Unlock()
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
		// Nothing of it is stored: not the new items, nor the ones whose
		// tickets calls later in the batch took for an existing key.
		// Each call is stored alone, as after any database error (its
		// key was fixed before, so nothing is stored twice; and should
		// the commit have happened after all, the key is found).
		for _, c := range live {
			if c.err == nil {
				c.t, c.evs, c.solo = Ticket{}, nil, true
			}
		}
		return false
	}
	return true
}

// enqueueAlone stores a checked message in a transaction of its own.
//
// A call stored alone may wait for its lane's lock (Postgres) holding a
// connection: so that calls piling up behind a locked lane cannot take
// the whole pool (and hold every other lane, and Run, until the lock is
// released), one call per lane at a time, and at most half the pool's
// connections, go to the database; the others wait in the process.
//
// The transaction is begun without ctx, so that its commit cannot be cut
// short: a commit cancelled in flight may still commit (Postgres goes on
// once its commit record is written, and a cancel may come too late), and
// the call would report an error for a stored item. ctx bounds the wait
// for a connection and the statements; a ctx that ends before the commit
// stores nothing.
func (o *Outbox) enqueueAlone(ctx context.Context, from string, m cloudapi.Message, lane, to string) (Ticket, error) {
	fail := func(err error) (Ticket, error) {
		if cerr := ctx.Err(); cerr != nil {
			return Ticket{}, cerr // the driver's reaction to it is noise
		}
		return Ticket{}, o.enqueueErr(err)
	}
	leave, err := o.enterSolo(ctx, lane)
	if err != nil {
		return Ticket{}, err
	}
	defer leave()
	conn, err := o.db.Conn(ctx)
	if err != nil {
		return fail(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	c := &enqCall{from: from, m: m, lane: lane, to: to}
	if err := o.storeAll(ctx, tx, []*enqCall{c}, false); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return Ticket{}, cerr
		}
		return Ticket{}, err
	}
	t, evs := c.t, c.evs
	if c.err != nil || len(evs) == 0 {
		return t, c.err // rejected, or an existing key: nothing to commit
	}
	if err := ctx.Err(); err != nil {
		return Ticket{}, err
	}
	if err := tx.Commit(); err != nil {
		return Ticket{}, fmt.Errorf("outbox: enqueue: %w", err)
	}
	o.poke()
	o.notify(evs)
	return t, nil
}

// enqueueErr wraps a database error of Enqueue: ErrClosed when the Outbox
// was closed meanwhile (the driver's words for it are "database is
// closed").
func (o *Outbox) enqueueErr(err error) error {
	if o.isClosed() {
		return fmt.Errorf("outbox: enqueue: %w (%w)", ErrClosed, err)
	}
	return fmt.Errorf("outbox: enqueue: %w", err)
}

// laneGate admits one call stored alone per lane to the database.
type laneGate struct {
	ch chan struct{} // holds a token while a call of the lane is admitted
	n  int           // the calls admitted or waiting (Outbox.soloMu)
}

// enterSolo waits, until ctx ends, for the turn of a call of lane to be
// stored alone, and returns the function that ends its turn.
func (o *Outbox) enterSolo(ctx context.Context, lane string) (func(), error) {
	o.soloMu.Lock()
	g := o.soloLanes[lane]
	if g == nil {
		g = &laneGate{ch: make(chan struct{}, 1)}
		o.soloLanes[lane] = g
	}
	g.n++
	o.soloMu.Unlock()
	release := func() {
		o.soloMu.Lock()
		if g.n--; g.n == 0 {
			delete(o.soloLanes, lane)
		}
		o.soloMu.Unlock()
	}
	select {
	case g.ch <- struct{}{}:
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
	select {
	case o.soloSem <- struct{}{}:
	case <-ctx.Done():
		<-g.ch
		release()
		return nil, ctx.Err()
	}
	return func() {
		<-o.soloSem
		<-g.ch
		release()
	}, nil
}
