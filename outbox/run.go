package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/clockwait"
	"github.com/wapace/wapace/internal/writemark"
	"github.com/wapace/wapace/pairlimit"
)

// maxDispatches bounds how often one item is handed to the Client when
// every attempt ends refused for a limit (backoff.ErrMaxAttempts).
const maxDispatches = 10

// retryAfterRefusals is how long an item refused for a limit on every
// attempt waits before it is dispatched again.
const retryAfterRefusals = time.Minute

// retryAfterInProgress is how long an item the Client refused because a
// send with its key is still in progress (cloudapi.ErrInProgress) waits
// before it is dispatched again.
const retryAfterInProgress = time.Second

var runs atomic.Int64

// foldEvery is how often a Run on Postgres folds the counters' deltas
// (one of the workers at a time does).
const foldEvery = time.Second

// claimed is an item a Run owns.
type claimed struct {
	Item
	id        int64
	lane      string
	otherSent int64            // Postgres: the lane's latest send by another worker
	msg       cloudapi.Message // once decoded (decode)
	body      string           // the stored message, until decoded
	decoded   bool             // msg holds the stored message
	pair      pairlimit.Pair
	trace     string       // the trace context stored at enqueue (with a Tracer)
	burstKey  string       // the key of its burst's first item ("" for none)
	rest      []*claimed   // a burst's head: the items of its burst after it, sent with it
	leaseEnd  atomic.Int64 // the claim's lease's end, as last committed (fence.go)
}

// finished is a send's outcome.
type finished struct {
	it   *claimed
	res  *cloudapi.Result
	err  error
	cut  bool       // a burst's item not sent after an earlier one failed
	rest []finished // a burst's head: the outcomes of the rest of its burst
	// wrote is when its request was first written (Unix nanoseconds on
	// the Outbox's clock; 0 if never): see measure.
	wrote int64
}

// Run dispatches queued items through c until ctx ends, and returns ctx's
// error then, ErrClosed once the Outbox is closed, or a permanent database
// error. Transient database errors (SQLite busy past its timeout because
// another process holds the write lock, a Postgres connection terminated or
// refused during a restart or failover) do not end it: it reports them
// (WithRunErrorObserver, WithLogger), waits a bounded backoff on the
// Outbox's clock (50 ms doubling to 5 s) and carries on; outcomes it could
// not record are kept and recorded then, claims whose commit failed are
// put back, so nothing is lost or sent twice meanwhile. Run is the caller's goroutine;
// the sends it starts (as many at once as its numbers need, at most
// WithConcurrency, each the head of one lane) end before it returns.
//
// Each lane, one business number and one recipient, is sent in FIFO order,
// one item at a time; lanes are independent: a lane whose pair is in debt
// or held after a 131056, or whose number is held, waits on the clock
// holding no send, and never delays another lane. With SQLite, business
// numbers share the sends: each number with live items has its share
// first (what it needs, see WithConcurrency), so that a number waiting for
// its throughput slots does not hold every send while the others' lanes
// wait, and the sends a number cannot use go to the others. Run sleeps until the
// next due instant (a lane's wait, a deadline, a lease), an enqueue, or a
// send's end; it does not poll (but see WithIdleWake).
//
// On each wake-up, before claiming, Run: marks submitted_unknown the items
// claimed by a worker whose lease ended (it died mid-request: never resent
// automatically), except those whose requests provably never left, which
// it queues again at the head of their lanes (claims made with
// WithWriteMarks and not yet marked); dead-letters as expired the queued items whose deadline
// passed; and queues again the submitted_unknown items a ResendPolicy
// allows. Right before each attempt it calls the Revalidate hook and, with
// WithServiceWindow, checks the window (131047) without spending anything.
//
// Outcomes are recorded in batches, each in the transaction that claims
// as many items again: Run wakes when half of the sends it wants in
// flight have finished, or all of those in flight, or when the first
// outcome not yet recorded has waited 50 ms (so that a slow send never
// holds the others' records), or at its next due instant. While it is
// busy recording, the outcomes that arrive meanwhile make up the next
// batch. A crash before an outcome is recorded leaves the item
// submitted_unknown, never lost and never sent again.
//
// Run works on any clock.Clock, including a discrete-event simulation
// clock that offers SleepContext and Go (package simclock): it waits only
// through the clock and starts its sends with the clock's Go.
//
// When ctx ends, requests in flight get WithStopGrace to finish before
// they are cancelled, their leases still renewed; an item cancelled
// before its request was written goes back to queued.
//
// An item whose request the Client or the lease refused without writing
// it goes back to its lane's head, its attempt uncounted: refused by the
// lease's fence (see WithLease), at once; refused because a send with its
// key is in progress (cloudapi.ErrInProgress) or because the keys of the
// sends in flight fill the Client's idempotency memory
// (cloudapi.ErrIdempotencyMemoryFull: give the Client a memory larger
// than WithConcurrency), a second later.
func (o *Outbox) Run(ctx context.Context, c *cloudapi.Client) error {
	if o.isClosed() {
		return ErrClosed
	}
	if c == nil {
		return errors.New("outbox: run: nil client")
	}
	if fixed := o.cfg.client; fixed != nil && c != fixed {
		return optErr("run: a Client other than the one given to WithClient")
	}
	o.client.Store(c)
	r := &runner{o: o, c: c, owner: fmt.Sprintf("%s/%s/%d", o.owner, o.incarnation, runs.Add(1)),
		inflight: map[string]*claimed{}, done: make(chan finished, o.cfg.concurrency), cursors: map[string]string{},
		cycle: cycleStart}
	r.batch.Store(int64(max(1, o.cfg.concurrency/batchOf)))
	if err := r.register(ctx); err != nil {
		return err
	}
	lctx, stopLinger := context.WithCancel(context.WithoutCancel(ctx))
	r.lingerCtx = lctx
	defer stopLinger()
	o.addRunner(r)
	defer r.leave(context.WithoutCancel(ctx))
	defer o.removeRunner(r)
	return r.run(ctx)
}

type runner struct {
	o        *Outbox
	c        *cloudapi.Client
	owner    string
	inflight map[string]*claimed
	done     chan finished // buffered for every send in flight: never blocks
	flying   atomic.Int64  // sends started and not yet taken from done
	batch    atomic.Int64  // outcomes that wake Run (budget)
	renewAt  time.Time
	beatAt   time.Time // WithWorkerID: when to renew the name's heartbeat
	sweepAt  time.Time // when a sweep may next find work (zero: now)
	foldAt   time.Time // Postgres: when to fold the counters' deltas next

	// The time bound on a batch (linger): the first outcome that arrives
	// while none waits starts a timer that wakes Run after lingerFor.
	lingering atomic.Bool     // a timer runs for the outcomes waiting in done
	lingerGen atomic.Uint64   // counts collects: a timer started before the last one is void
	lingerCtx context.Context // ended when Run returns: the timers stop

	// How many sends Run wants in flight (inflight.go).
	cycle   time.Duration  // a send's place, write to record (measure)
	wants   map[string]int // by number, until wantsAt
	wantsAt time.Time      // when to ask the numbers' figures again
	scale   float64        // the wants' share of the cap (at most 1)
	picked  []string       // Postgres: the numbers of the last picks
	peers   peers          // Postgres: the Runs sharing the outbox (peers.go)

	failures   int           // consecutive transient errors (rideOut)
	unrecorded []finished    // outcomes a failed transaction did not record
	uncertain  []any         // keys a failed claim transaction may have claimed
	marks      markGroup     // the write marks of the sends in flight (mark.go)
	ckpt       *checkpointer // copies the log back off Run's commits, or nil (checkpoint.go)
	// SQLite: the transitions of Run's transaction in progress, written
	// once before its commit (moveLog); nil: each statement writes its own.
	txMoves *moveLog

	// Sharing the sends between numbers (share.go).
	ending    map[string]bool   // keys in inflight whose outcome is being recorded
	senders   []string          // the numbers with live items, as last listed
	sendersAt time.Time         // when to list them again
	cursors   map[string]string // by number: the lane its last pickLanes ended at

	sigMu   sync.Mutex         // protects wake, awake and pending
	wake    context.CancelFunc // ends the current sleep
	awake   chan struct{}      // closed once the current sleep has ended
	pending bool               // a signal came while not sleeping
}

// batchOf and lingerFor shape Run's batches: Run wakes to record the
// outcomes of its sends (and claim as many items again, in one
// transaction) once 1/batchOf of the sends it wants in flight (budget,
// inflight.go) have ended, or
// all of those in flight, or lingerFor after the first of them ended. A
// transaction of the floor's carries 100 rows; with an eighth of 64 sends
// Run's carried 13 to 27 messages, with half 26 to 33, and the begin, the
// commit, the wake-up and the pages each transaction writes are paid for
// that many (BENCHMARKS.md). Half the sends stay in flight meanwhile. The
// bound keeps a slow send from holding the others' records (and their
// lanes' next items, and their slots) for long; 50 ms is well under a
// request's round trip to Meta, and lets a batch fill at 1,000 msg/s (10
// ms cut a simulated campaign's batches to 10 messages, a quarter more
// CPU).
const (
	batchOf   = 2
	lingerFor = 50 * time.Millisecond
)

// goer is implemented by clocks that must know of every goroutine taking
// part in a simulation (simclock): Run starts its sends with it.
type goer interface{ Go(f func()) }

// signal ends Run's current sleep, or the next one at once. It returns
// once Run is awake, so that a simulation clock never sees every
// goroutine waiting in between (it would jump ahead in time).
func (r *runner) signal() {
	r.sigMu.Lock()
	if r.wake == nil {
		r.pending = true
		r.sigMu.Unlock()
		return
	}
	wake, awake := r.wake, r.awake
	r.wake = nil
	r.sigMu.Unlock()
	wake()
	<-awake
}

// sleep waits d on the clock (d < 0: until signalled), or until signalled
// or ctx ends. All of Run's waiting happens here, so that it works on any
// clock, a discrete-event simulation's included.
func (r *runner) sleep(ctx context.Context, d time.Duration) {
	r.sigMu.Lock()
	if r.pending {
		r.pending = false
		r.sigMu.Unlock()
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	awake := make(chan struct{})
	r.wake, r.awake = cancel, awake
	r.sigMu.Unlock()
	defer func() {
		r.sigMu.Lock()
		r.wake = nil
		r.sigMu.Unlock()
		close(awake)
		cancel()
	}()
	clk := r.o.cfg.clock
	if d < 0 {
		if _, ok := clk.(clockwait.ContextSleeper); !ok {
			<-wctx.Done()
			return
		}
		d = 24 * time.Hour // a simulation clock only wakes what sleeps on it
	}
	_ = clockwait.Sleep(wctx, clk, d)
}

func (r *runner) run(ctx context.Context) error {
	o := r.o
	clk := o.cfg.clock
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	dbCtx := context.WithoutCancel(ctx)

	stopListening := r.listen(ctx)
	defer stopListening()
	r.ckpt = o.startCheckpointer()
	defer r.ckpt.close()
	var err error
	for ctx.Err() == nil {
		// (seedPairs does nothing once it has succeeded.)
		if err = r.seedPairs(ctx, clk.Now()); err == nil {
			now := clk.Now()
			var more bool
			if more, err = r.step(ctx, dbCtx, sendCtx, now); err == nil && !more {
				err = r.wait(ctx, now)
			}
		}
		if err == nil {
			r.failures = 0
			continue
		}
		if !r.rideOut(ctx, err) {
			break
		}
		err = nil
	}
	if err != nil && o.isClosed() {
		err = ErrClosed
	}
	if err != nil && ctx.Err() != nil {
		// Asked to stop: a query cut short by the cancellation fails
		// with the driver's own words ("interrupted", "transaction has
		// already been committed or rolled back"). What it would have
		// done is done by the next Run; report the stop.
		err = nil
	}
	// Stop: let requests in flight finish, cancel them after the grace.
	graceEnd := clk.Now().Add(o.cfg.stopGrace)
	cancelled := false
	for len(r.inflight) > 0 {
		if ferr := r.drain(dbCtx, sendCtx); ferr != nil {
			if err == nil {
				err = ferr // the rest is still collected (and probably not recorded)
			}
			// Stopping: an outcome that cannot be recorded now leaves its
			// item sending, to become submitted_unknown once its lease
			// ends (never resent).
			for _, f := range r.unrecorded {
				delete(r.inflight, f.it.Key)
			}
			r.unrecorded = nil
		}
		if len(r.inflight) == 0 {
			break
		}
		now := clk.Now()
		if !cancelled && !now.Before(graceEnd) {
			cancelSends()
			cancelled = true
		}
		// The leases of the sends still in flight are renewed through the
		// grace, as before the stop: otherwise their fence closes once two
		// thirds of the lease have passed, and the sends still waiting for
		// their slot end refused for nothing (a failed renewal only lets
		// the fence close, as it would have while running).
		if !now.Before(r.renewAt) {
			if rerr := r.renew(dbCtx, now); rerr != nil {
				r.renewAt = now.Add(o.cfg.lease / 3)
			}
		}
		d := r.renewAt.Sub(now)
		if !cancelled {
			d = min(d, graceEnd.Sub(now))
		}
		r.sleep(context.Background(), max(d, 0))
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// step sweeps, claims and starts sends, and records finished ones. It
// reports whether it should run again at once (a full batch was claimed).
// Outcomes are recorded under dbCtx, which a stop does not cancel: a send
// that ended is recorded as what it was, not left to become unknown.
func (r *runner) step(ctx, dbCtx, sendCtx context.Context, now time.Time) (bool, error) {
	fs := r.collect()
	if err := r.beat(ctx, now); err != nil && ctx.Err() == nil {
		return false, errors.Join(err, r.finish(dbCtx, sendCtx, fs))
	}
	if err := r.putBack(ctx, now); err != nil {
		return false, errors.Join(err, r.finish(dbCtx, sendCtx, fs))
	}
	if len(r.inflight) > len(fs) && !now.Before(r.renewAt) {
		if err := r.renew(ctx, now); err != nil {
			return false, errors.Join(err, r.finish(dbCtx, sendCtx, fs))
		}
	}
	if r.o.d.postgres && !now.Before(r.foldAt) {
		// Keep the counters' deltas few, so that reading them stays cheap.
		if err := r.o.foldCounts(ctx); err != nil && ctx.Err() == nil {
			return false, errors.Join(fmt.Errorf("outbox: run: folding counters: %w", err), r.finish(dbCtx, sendCtx, fs))
		}
		r.foldAt = now.Add(foldEvery)
	}
	want, err := r.budget(ctx, now)
	if err != nil && ctx.Err() == nil {
		return false, errors.Join(fmt.Errorf("outbox: run: listing numbers: %w", err), r.finish(dbCtx, sendCtx, fs))
	}
	free := want - (len(r.inflight) - len(fs))
	// With every slot taken, a transaction still runs when a sweep is due
	// (another worker's lease ended, a deadline passed, a resend is due):
	// nextWake wakes Run for it, and skipping it would wake Run again at
	// once, for as long as its own sends last.
	if ctx.Err() != nil || (free <= 0 && now.Before(r.sweepAt)) {
		if err := r.finish(dbCtx, sendCtx, fs); err != nil {
			return false, err
		}
		r.measure(fs, r.o.cfg.clock.Now())
		return false, nil
	}
	free = max(free, 0)
	items, picked, err := r.recordAndClaim(dbCtx, sendCtx, now, fs, free)
	if err != nil {
		return false, err
	}
	r.measure(fs, r.o.cfg.clock.Now())
	if r.o.d.postgres {
		r.picked = r.picked[:0]
		for _, it := range items {
			if !slices.Contains(r.picked, it.From) {
				r.picked = append(r.picked, it.From)
			}
		}
	}
	if len(r.inflight) == 0 && len(items) > 0 {
		r.renewAt = now.Add(r.o.cfg.lease / 3)
	}
	r.start(sendCtx, items)
	// A full pick may have left due lanes unpicked, even if the picked
	// ones were held or dropped rather than sent: with slots left free,
	// pick again at once. With every slot taken, step again at once only
	// if a batch of outcomes is ready (they arrived during this step);
	// otherwise wait for one (or its time bound).
	return (picked == free && len(items) < free) || r.ready(), nil
}

// ready reports whether a batch of outcomes waits to be recorded: a
// batch's worth, or every send in flight.
func (r *runner) ready() bool {
	n := int64(len(r.done))
	return n > 0 && (n >= r.batch.Load() || n >= r.flying.Load())
}

// linger starts the time bound of the outcomes now waiting in done, unless
// one runs: after lingerFor, it wakes Run if they still wait. (A timer
// whose outcomes were taken meanwhile wakes no one: it would cut the next
// batch short.)
func (r *runner) linger(spawn func(func())) {
	if !r.lingering.CompareAndSwap(false, true) {
		return
	}
	gen := r.lingerGen.Load()
	spawn(func() {
		if clockwait.Sleep(r.lingerCtx, r.o.cfg.clock, lingerFor) == nil && r.lingerGen.Load() == gen && len(r.done) > 0 {
			r.signal()
		}
	})
}

// collect takes the sends that have finished, without waiting, and the
// outcomes a failed transaction left unrecorded.
func (r *runner) collect() []finished {
	fs := r.unrecorded
	r.unrecorded = nil
	// Before taking them: the time bounds started so far are void, and an
	// outcome that arrives after this starts one of its own (linger).
	r.lingerGen.Add(1)
	r.lingering.Store(false)
	for {
		select {
		case f := <-r.done:
			// Counted off at once, not once recorded: a send ending
			// while these are recorded must see itself as the last one
			// in flight, or it would not wake Run (which then slept
			// until its next due instant, or for ever once stopping).
			r.flying.Add(-1)
			fs = append(fs, f)
			continue
		default:
		}
		return fs
	}
}

// drain records the sends that have finished, without waiting.
func (r *runner) drain(ctx, sendCtx context.Context) error {
	return r.finish(ctx, sendCtx, r.collect())
}

// recordAndClaim records the outcomes fs and claims up to n items in one
// transaction (one commit for both, as a batch of the floor's would). If
// it fails, the outcomes are recorded alone (or kept for the next cycle,
// see finish), and the error returned; claims whose commit failed may
// have been committed all the same: putBack queues them again first. Its
// ctx is dbCtx: step does not begin it once Run is asked to stop, and once
// begun it is not cut short.
func (r *runner) recordAndClaim(ctx, sendCtx context.Context, now time.Time, fs []finished, n int) ([]*claimed, int, error) {
	o := r.o
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, 0, errors.Join(fmt.Errorf("outbox: run: %w", err), r.finish(ctx, sendCtx, fs))
	}
	defer tx.Rollback()
	r.txMoves = r.newMoveLog()
	defer func() { r.txMoves = nil }()
	evs, err := r.record(ctx, tx, sendCtx, now, fs)
	if err != nil {
		_ = tx.Rollback()
		return nil, 0, errors.Join(err, r.finish(ctx, sendCtx, fs))
	}
	r.ending = make(map[string]bool, len(fs)) // in flight no more (spread)
	for _, f := range fs {
		r.ending[f.it.Key] = true
	}
	items, picked, cevs, err := r.claim(ctx, tx, now, n)
	if err == nil {
		err = r.flushMoves(ctx, tx)
	}
	if err != nil {
		_ = tx.Rollback()
		r.txMoves = nil // (finish records in a transaction of its own)
		return nil, 0, errors.Join(err, r.finish(ctx, sendCtx, fs))
	}
	if err := tx.Commit(); err != nil {
		// The answer was lost: the claims may have been committed.
		for _, it := range items {
			r.uncertain = append(r.uncertain, it.Key)
			for _, b := range it.rest {
				r.uncertain = append(r.uncertain, b.Key)
			}
		}
		// (Recording again is harmless: each update applies only to an
		// item this Run still has sending.)
		return nil, 0, errors.Join(fmt.Errorf("outbox: run: %w", err), r.finish(ctx, sendCtx, fs))
	}
	r.settled(fs)
	r.ckpt.moved(len(fs) + len(items))
	o.notify(append(evs, cevs...))
	return items, picked, nil
}

// newMoveLog returns the moveLog of a transaction of Run's (nil with
// Postgres, whose statements write their transitions themselves).
func (r *runner) newMoveLog() *moveLog {
	if r.o.d.postgres {
		return nil
	}
	return &moveLog{}
}

// flushMoves writes the transitions of Run's transaction in tx, before
// its commit.
func (r *runner) flushMoves(ctx context.Context, tx *sql.Tx) error {
	if r.txMoves == nil {
		return nil
	}
	if err := r.txMoves.flush(ctx, r.o, tx); err != nil {
		return fmt.Errorf("outbox: run: %w", err)
	}
	return nil
}

// settled forgets the sends fs: recorded or not, they are over. (An
// outcome that could not be recorded leaves its item sending: once its
// lease ends, it becomes submitted_unknown, never resent.)
func (r *runner) settled(fs []finished) {
	for _, f := range fs {
		delete(r.inflight, f.it.Key)
	}
}

// wait sleeps until the next due instant, a send's end, an enqueue or
// ctx's end.
func (r *runner) wait(ctx context.Context, now time.Time) error {
	o := r.o
	next, err := r.nextWake(ctx, now)
	if err != nil {
		return err
	}
	if len(r.inflight) > 0 && (next.IsZero() || r.renewAt.Before(next)) {
		next = r.renewAt
	}
	if o.cfg.ownerFixed && (next.IsZero() || r.beatAt.Before(next)) {
		next = r.beatAt
	}
	if o.d.postgres && len(r.inflight) > 0 && (next.IsZero() || r.peers.beatAt.Before(next)) {
		// Sends waiting for their slots: keep counted among the Runs
		// sharing the outbox (peers.go), or the others would claim its
		// share too.
		next = r.peers.beatAt
	}
	if o.cfg.idleWake > 0 {
		if idle := now.Add(o.cfg.idleWake); next.IsZero() || idle.Before(next) {
			next = idle
		}
	}
	d := time.Duration(-1)
	if !next.IsZero() {
		if d = next.Sub(now); d <= 0 {
			return nil
		}
	}
	r.sleep(ctx, d)
	return nil
}

// nextWake is the earliest future instant at which something becomes due:
// a held lane's head, a queued item's deadline, another worker's lease, a
// resend. Zero means nothing is scheduled.
func (r *runner) nextWake(ctx context.Context, now time.Time) (time.Time, error) {
	o := r.o
	resendAfter := int64(0)
	if o.cfg.resend.After > 0 {
		resendAfter = int64(o.cfg.resend.After)
	}
	var due, exp, lease, unknown sql.NullInt64
	err := o.queryRow(ctx, o.db, sqlNextWake, nanos(now), r.owner, o.cfg.resend.Max, nanos(now)).Scan(&due, &exp, &lease, &unknown)
	if err != nil {
		return time.Time{}, fmt.Errorf("outbox: run: %w", err)
	}
	var next int64
	consider := func(v sql.NullInt64, add int64) {
		if v.Valid && v.Int64 > 0 && (next == 0 || v.Int64+add < next) {
			next = v.Int64 + add
		}
	}
	consider(exp, 0)
	consider(lease, 1) // strictly after the lease's end
	if resendAfter > 0 {
		consider(unknown, resendAfter)
	}
	// Sweeps find nothing before then (or until an idle wake, when other
	// workers may have added work).
	r.sweepAt = fromNanos(next)
	if next == 0 {
		r.sweepAt = now.Add(24 * time.Hour)
	}
	if idle := now.Add(o.cfg.idleWake); o.cfg.idleWake > 0 && idle.Before(r.sweepAt) {
		r.sweepAt = idle
	}
	consider(due, 0)
	return fromNanos(next), nil
}

var sqlNextWake = `SELECT
		(SELECT MIN(due_at) FROM outbox_items WHERE state = 'queued' AND due_at > ?),
		(SELECT MIN(expires_at) FROM outbox_items WHERE state = 'queued' AND expires_at > 0),
		(SELECT MIN(lease_until) FROM outbox_items WHERE state = 'sending' AND owner <> ?),
		(SELECT MIN(state_at) FROM outbox_items WHERE state = 'submitted_unknown' AND resends < ?
			AND (expires_at = 0 OR expires_at > ?))`

var sqlRenew = `UPDATE outbox_items SET lease_until = ? WHERE state = 'sending' AND owner = ? RETURNING id`

// renew extends the leases of this Run's claims (those still its own: a
// claim taken over keeps its old end, and its fence closes).
func (r *runner) renew(ctx context.Context, now time.Time) error {
	o := r.o
	end := nanos(now.Add(o.cfg.lease))
	ids, err := o.queryIDs(ctx, o.db, sqlRenew, end, r.owner)
	if err != nil {
		return fmt.Errorf("outbox: run: renewing leases: %w", err)
	}
	r.renewed(ids, end)
	r.renewAt = now.Add(o.cfg.lease / 3)
	return nil
}

// pickSQL selects up to n due lane heads (locking them, with Postgres,
// so that other workers skip them). A lane's head is its first queued
// item in (seq, id) order, when no item of the lane is sending. seq is 0
// for every item (databases written by earlier versions hold larger ones
// for resent items, which go last), so the head is the oldest: a resent
// item keeps its original place.
func pickSQL(d dialect) string {
	hint, limit := "", "?"
	if !d.postgres {
		// "+?", not "?": SQLite plans a LIMIT of a bare parameter with its
		// bound value, and prepares the statement again whenever that
		// value changes (every claim asks for its free slots).
		limit = "+?"
		// Walk the queue in (due_at, seq) order and stop at LIMIT; the
		// planner would otherwise sort every queued row.
		hint = " INDEXED BY outbox_items_queued"
	}
	// With Postgres, the lane's latest send by another worker, to seed
	// the pair limiter (seedLane).
	other := `0`
	if d.postgres {
		other = `COALESCE((SELECT s.sent_at FROM outbox_items s WHERE s.lane = i.lane AND s.sent_at > 0 AND s.id <> i.id
			AND s.state NOT IN ('queued', 'expired') AND s.owner <> ? AND NOT ` + sqlNeverWrittenOther + ` ORDER BY s.sent_at DESC LIMIT 1), 0)`
	}
	// The lane's other live items: by name on Postgres, by number on
	// SQLite (the live index's key, schema 7). "j.id <> i.id" first: the
	// live index finds i itself in its lane, which never blocks it; so
	// tested, the lane of a single item (the common case) is answered
	// from the index, without reading i's row a second time for j.state.
	sameLane := `j.lane = i.lane`
	if !d.postgres {
		sameLane = `j.sender = i.sender AND j.lane_no = i.lane_no`
	}
	q := `SELECT i.id, i.ikey, i.sender, i.recipient, i.kind, i.message, i.attempts, i.resends, i.enqueued_at, i.expires_at, i.lane, i.burst, ` + other + `
		FROM outbox_items i` + hint + ` WHERE i.state = 'queued' AND i.due_at <= ?
		AND NOT EXISTS (SELECT 1 FROM outbox_items j WHERE ` + sameLane + ` AND j.state IN ('queued', 'sending')
			AND j.id <> i.id AND (j.state = 'sending' OR j.seq < i.seq OR (j.seq = i.seq AND j.id < i.id)))
		ORDER BY i.due_at, i.seq LIMIT ` + limit
	if d.postgres {
		q += ` FOR UPDATE OF i SKIP LOCKED`
	}
	return q
}

// claim, in tx: dead leases become
// submitted_unknown, deadlines passed become expired, resends allowed by
// the policy are queued again; then up to n due lane heads are picked and
// checked (known waits, deadline, service window, revalidation), and those
// that may go now are claimed: sending, owned by this Run under a lease.
// A head that starts a burst is claimed with the rest of its burst.
func (r *runner) claim(ctx context.Context, tx *sql.Tx, now time.Time, n int) (items []*claimed, picked int, evs []Event, err error) {
	o := r.o
	sweep := func(st State, reason, query string, args ...any) error {
		keys, err := o.queryKeys(ctx, tx, query, args...)
		if err != nil {
			return err
		}
		evs = append(evs, events(now, st, reason, keys...)...)
		return nil
	}
	if now.Before(r.sweepAt) {
		sweep = func(State, string, string, ...any) error { return nil }
	}
	const unwritten = "claimed by a worker whose lease ended before its request was written: queued again"
	if err := sweep(StateQueued, unwritten, sqlSweepUnwritten, nanos(now), nanos(now), unwritten, r.owner, nanos(now)); err != nil {
		return nil, 0, nil, fmt.Errorf("outbox: run: recovering dead claims: %w", err)
	}
	const dead = "claimed by a worker whose lease ended mid-send: outcome unknown, not resent"
	if err := sweep(StateSubmittedUnknown, dead, sqlSweepDead, nanos(now), dead, r.owner, nanos(now)); err != nil {
		return nil, 0, nil, fmt.Errorf("outbox: run: recovering dead claims: %w", err)
	}
	const late = "freshness deadline passed while queued"
	if err := sweep(StateExpired, late, sqlSweepLate, nanos(now), late, nanos(now)); err != nil {
		return nil, 0, nil, fmt.Errorf("outbox: run: expiring: %w", err)
	}
	if p := o.cfg.resend; p.After > 0 {
		why := fmt.Sprintf("resend policy: no status webhook within %v of an unknown outcome", p.After)
		if err := sweep(StateQueued, why, sqlSweepResend, nanos(now), nanos(now), why, nanos(now.Add(-p.After)), p.Max, nanos(now)); err != nil {
			return nil, 0, nil, fmt.Errorf("outbox: run: resending: %w", err)
		}
	}
	if n <= 0 {
		return nil, 0, evs, nil // a sweep only (step: every slot taken)
	}
	pickArgs := []any{nanos(now), n}
	if o.d.postgres {
		pickArgs = []any{r.owner, nanos(now), n}
	}
	picks, bad, err := r.scanPicks(ctx, tx, now, pickSQL(o.d), pickArgs...)
	if err != nil {
		return nil, 0, nil, err
	}
	if !o.d.postgres {
		// Each number its share of the sends (share.go).
		if picks, bad, err = r.spread(ctx, tx, now, n, picks, bad); err != nil {
			return nil, 0, nil, err
		}
	}
	for _, k := range bad {
		e, err := r.drop(ctx, tx, now, k, StateFailed, 0, reasonUnreadable)
		if err != nil {
			return nil, 0, nil, err
		}
		evs = append(evs, e...)
	}
	var refs []claimRef
	var keys []string
	busy := 0
	for _, it := range picks {
		if it.burstKey != "" {
			// A burst is decoded here, its head and the rest of it, which
			// follows its head in the lane (a single message is decoded by
			// its send, off Run's goroutine). If one of them is
			// unreadable, the burst fails whole, unsent: no bubble after a
			// hole, as the Client's bursts.
			err := it.decode()
			lerr := r.loadBurst(ctx, tx, now, it)
			if lerr != nil && !errors.Is(lerr, errUnreadable) {
				return nil, 0, nil, fmt.Errorf("outbox: run: claiming: %w", lerr)
			}
			if err == nil {
				err = lerr
			}
			if err != nil {
				e, err := r.dropAll(ctx, tx, now, it, StateFailed, 0, reasonUnreadable)
				if err != nil {
					return nil, 0, nil, err
				}
				evs = append(evs, e...)
				continue
			}
		}
		if r.busy(it) {
			// Taken over while this Run's send of it waits: claimed
			// again once that send has ended (which wakes Run).
			busy++
			continue
		}
		e, send, err := r.check(ctx, tx, now, it)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("outbox: run: %w", err)
		}
		evs = append(evs, e...)
		if send {
			items = append(items, it)
			for _, b := range append([]*claimed{it}, it.rest...) {
				b.State, b.Attempts = StateSending, b.Attempts+1
				refs, keys = append(refs, claimRef{b.id, b.From}), append(keys, b.Key)
			}
		}
	}
	if len(refs) > 0 {
		unwritten := int64(0) // without marks: not provably unwritten
		if o.cfg.marks {
			unwritten = nanos(now) // = sent_at: not written until marked (mark.go)
		}
		end := nanos(now.Add(o.cfg.lease))
		if err := o.claimMoved(ctx, tx, r.txMoves, refs, r.owner, end, nanos(now), unwritten); err != nil {
			return nil, 0, nil, fmt.Errorf("outbox: run: claiming: %w", err)
		}
		for _, it := range items {
			it.leaseEnd.Store(end)
			for _, b := range it.rest {
				b.leaseEnd.Store(end)
			}
		}
		evs = append(evs, events(now, StateSending, "", keys...)...)
		if err := o.loadTraces(ctx, tx, items); err != nil {
			return nil, 0, nil, fmt.Errorf("outbox: run: claiming: %w", err)
		}
	}
	return items, len(picks) + len(bad) - busy, evs, nil
}

// The sweeps of claim.
var (
	sqlSweepDead = `UPDATE OR FAIL outbox_items SET state = 'submitted_unknown', state_at = ?, reason = ?
		WHERE state = 'sending' AND owner <> ? AND lease_until < ? RETURNING ikey`
	sqlSweepLate = `UPDATE OR FAIL outbox_items SET state = 'expired', state_at = ?, reason = ?
		WHERE state = 'queued' AND expires_at > 0 AND expires_at <= ? RETURNING ikey`
	sqlSweepResend = `UPDATE OR FAIL outbox_items SET state = 'queued', resends = resends + 1,
		due_at = ?, state_at = ?, reason = ? WHERE state = 'submitted_unknown' AND state_at <= ? AND resends < ?
		AND (expires_at = 0 OR expires_at > ?) RETURNING ikey`
)

// claimColumns are the columns claimed.scan reads.
const claimColumns = `id, ikey, sender, recipient, kind, message, attempts, resends, enqueued_at, expires_at, lane, burst`

// reasonUnreadable is the reason of an item whose stored message cannot
// be decoded: it fails, never sent.
const reasonUnreadable = "stored message unreadable"

// errUnreadable is the outcome of a send whose stored message could not be
// decoded (nothing was sent).
var errUnreadable = errors.New("outbox: run: " + reasonUnreadable)

// decode decodes its stored message into it.msg, once.
func (it *claimed) decode() error {
	if it.decoded {
		return nil
	}
	if err := it.msg.UnmarshalJSON([]byte(it.body)); err != nil { // (json.Unmarshal would check the JSON twice)
		return fmt.Errorf("%w: item %q: %w", errUnreadable, it.Key, err)
	}
	it.body, it.decoded = "", true
	return nil
}

// scan reads claimColumns (and what follows them) into it.
func (it *claimed) scan(rows *sql.Rows, body *string, more ...any) error {
	var enq, exp int64
	dest := append([]any{&it.id, &it.Key, &it.From, &it.To, &it.Kind, body, &it.Attempts, &it.Resends, &enq, &exp, &it.lane, &it.burstKey}, more...)
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	it.State, it.EnqueuedAt, it.ExpiresAt = StateQueued, fromNanos(enq), fromNanos(exp)
	if it.To != "" {
		it.pair, _ = pairlimit.NewPair(it.From, it.To)
	}
	return nil
}

// loadBurst reads the queued items of head's burst that follow it, all
// of them even if one's stored message cannot be decoded: it then
// returns that error (errUnreadable), for claim to fail the burst whole.
func (r *runner) loadBurst(ctx context.Context, tx *sql.Tx, now time.Time, head *claimed) error {
	rows, err := r.o.query(ctx, tx, burstSQL(r.o.d), head.lane, head.burstKey, head.id)
	if err != nil {
		return err
	}
	defer rows.Close()
	var unreadable error
	for rows.Next() {
		it := &claimed{}
		var body string
		var zero int64
		if err := it.scan(rows, &body, &zero); err != nil {
			return err
		}
		it.UpdatedAt, it.body = now, body
		if err := it.decode(); err != nil && unreadable == nil {
			unreadable = err
		}
		head.rest = append(head.rest, it)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return unreadable
}

// burstSQL reads the rest of a burst whose head was picked. On Postgres
// it locks those items as the pick locks the head: an operator's Expire
// or another worker's sweep committed between this read and the claim
// would otherwise be overwritten by the claim (the item sent after all),
// and its transition recorded twice in the counters.
func burstSQL(d dialect) string {
	// (The live index's condition is repeated so that the index serves:
	// state = 'queued' alone does not let SQLite use it.)
	q := `SELECT ` + claimColumns + `, 0 FROM outbox_items WHERE lane = ? AND burst = ? AND state = 'queued' AND id > ?
		AND state IN ('queued', 'sending') ORDER BY seq, id`
	if d.postgres {
		q += ` FOR UPDATE`
	} else {
		// The live index's key is the head's number and lane number
		// (schema 7): read from the head, whose id is the third argument.
		q = `SELECT ` + claimColumns + `, 0 FROM outbox_items WHERE lane = ?1 AND burst = ?2 AND state = 'queued' AND id > ?3
		AND state IN ('queued', 'sending') AND sender = (SELECT h.sender FROM outbox_items h WHERE h.id = ?3)
		AND lane_no = (SELECT h.lane_no FROM outbox_items h WHERE h.id = ?3) ORDER BY seq, id`
	}
	return q
}

// claimSQL claims the items whose ids are listed (see claimMoved). On
// SQLite it returns nothing: claimMoved knows what it moved.
func claimSQL(d dialect) string {
	q := `UPDATE OR FAIL outbox_items SET state = 'sending', owner = ?, lease_until = ?, state_at = ?, sent_at = ?, unwritten_at = ?,
		attempts = attempts + 1, reason = '', moves = moves + 1 WHERE id ` + d.inList("bigint") + ` AND state = 'queued'`
	if d.postgres {
		q += ` RETURNING ` + movedColumns
	}
	return q
}

func (o *Outbox) queryKeys(ctx context.Context, ex execer, query string, args ...any) ([]string, error) {
	rows, err := o.query(ctx, ex, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// setState moves a claimed item of this Run to st.
func (r *runner) setState(ctx context.Context, ex execer, now time.Time, key string, st State, code int, reason, wamid string) ([]Event, error) {
	o := r.o
	res, err := o.exec(ctx, ex, sqlSetState, st.String(), nanos(now), code, reason, wamid, wamid, key, r.owner)
	if err != nil {
		return nil, fmt.Errorf("outbox: run: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if st != StateAccepted {
			return nil, nil // lost the claim: another worker recorded it as unknown
		}
		// Our lease ended and another worker marked it unknown; the
		// answer came after all: it was accepted.
		reason = "accepted after its lease ended"
		res, err = o.exec(ctx, ex, sqlLateAccept, nanos(now), wamid, reason, key)
		if err != nil {
			return nil, fmt.Errorf("outbox: run: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, nil
		}
	}
	return events(now, st, reason, key), nil
}

// The statements of setState, drop, requeue and check.
var (
	sqlSetState = `UPDATE OR FAIL outbox_items SET state = ?, state_at = ?, code = ?, reason = ?, lease_until = 0,
		wamid = CASE WHEN ? <> '' THEN ? ELSE wamid END WHERE ikey = ? AND state = 'sending' AND owner = ?`
	sqlLateAccept = `UPDATE OR FAIL outbox_items SET state = 'accepted', state_at = ?, wamid = ?, reason = ?
		WHERE ikey = ? AND state = 'submitted_unknown'`
	sqlDrop = `UPDATE OR FAIL outbox_items SET state = ?, state_at = ?, code = ?, reason = ?
		WHERE ikey = ? AND state = 'queued'`
	sqlRequeue = `UPDATE OR FAIL outbox_items SET state = 'queued', state_at = ?, due_at = ?, reason = ?,
		lease_until = 0, attempts = attempts - ? WHERE ikey = ? AND state = 'sending' AND owner = ?`
	sqlHold = `UPDATE OR FAIL outbox_items SET due_at = ? WHERE id = ?`
)

// drop moves a picked (still queued) item to a dead-letter state without
// sending it, with the rest of its burst.
func (r *runner) drop(ctx context.Context, ex execer, now time.Time, key string, st State, code int, reason string) ([]Event, error) {
	if _, err := r.o.exec(ctx, ex, sqlDrop, st.String(), nanos(now), code, reason, key); err != nil {
		return nil, fmt.Errorf("outbox: run: %w", err)
	}
	return events(now, st, reason, key), nil
}

// dropAll is drop for it and the rest of its burst.
func (r *runner) dropAll(ctx context.Context, ex execer, now time.Time, it *claimed, st State, code int, reason string) ([]Event, error) {
	var evs []Event
	for _, b := range append([]*claimed{it}, it.rest...) {
		e, err := r.drop(ctx, ex, now, b.Key, st, code, reason)
		if err != nil {
			return nil, err
		}
		evs = append(evs, e...)
	}
	return evs, nil
}

// requeue puts a claimed item back at the head of its lane, due at due.
// With unsent, the attempt is not counted (its request was never written),
// and a bounce like the one before it is folded into that one's history
// row (foldBounce).
func (r *runner) requeue(ctx context.Context, ex execer, now, due time.Time, key, reason string, unsent bool) ([]Event, error) {
	undo := 0
	if unsent {
		undo = 1
	}
	res, err := r.o.exec(ctx, ex, sqlRequeue, nanos(now), nanos(due), reason, undo, key, r.owner)
	if err != nil {
		return nil, fmt.Errorf("outbox: run: %w", err)
	}
	if unsent {
		// (If another worker took the claim over, the update moved
		// nothing and there is no bounce to fold.)
		n, err := res.RowsAffected()
		if err != nil {
			return nil, fmt.Errorf("outbox: run: %w", err)
		}
		if n > 0 {
			if err := r.o.foldBounce(ctx, ex, key, reason); err != nil {
				return nil, fmt.Errorf("outbox: run: %w", err)
			}
		}
	}
	return events(now, StateQueued, reason, key), nil
}

// start starts the sends of claimed items (a burst's head sends its
// whole burst, back to back).
func (r *runner) start(sendCtx context.Context, items []*claimed) {
	spawn := func(f func()) { go f() }
	if g, ok := r.o.cfg.clock.(goer); ok {
		spawn = g.Go
	}
	for _, it := range items {
		r.inflight[it.Key] = it
		r.flying.Add(1)
		spawn(func() {
			r.done <- r.send(sendCtx, it)
			// Wake Run for a batch of outcomes (recorded in one
			// transaction, and as many slots refilled), or when nothing
			// else is in flight; otherwise within lingerFor.
			if r.ready() {
				r.signal()
			} else {
				r.linger(spawn)
			}
		})
	}
}

// send sends a claimed item (a burst's head: its whole burst) and
// returns its outcome. It runs on the send's goroutine, which decodes a
// single item's stored message (Run's goroutine decoded a burst's): one
// that cannot be decoded is not sent, its outcome errUnreadable.
func (r *runner) send(sendCtx context.Context, it *claimed) finished {
	if err := it.decode(); err != nil {
		return finished{it: it, err: err}
	}
	ctx, end := r.o.dispatch(sendCtx, it)
	var wrote atomic.Int64 // when the fence let the first body go (inflight.go)
	ctx = r.withFence(ctx, it, &wrote)
	if r.o.cfg.marks {
		ctx = writemark.With(ctx, r.markFunc(append([]*claimed{it}, it.rest...)))
	}
	if len(it.rest) > 0 {
		f := r.sendBurst(ctx, it)
		end(f.err)
		f.wrote = wrote.Load()
		return f
	}
	m := it.msg
	if it.Resends > 0 {
		// A resend is a new request: the Client (which remembers the keys
		// it sent) and the status webhooks tell it apart.
		m.IdempotencyKey = resendKey(it.Key, it.Resends)
	}
	res, err := r.c.Send(ctx, it.From, m)
	end(err)
	return finished{it: it, res: res, err: err, wrote: wrote.Load()}
}

// sendBurst sends a burst's items as one burst of the pair and returns
// the head's outcome, the others' in rest.
func (r *runner) sendBurst(sendCtx context.Context, head *claimed) finished {
	all := append([]*claimed{head}, head.rest...)
	msgs := make([]cloudapi.Message, len(all))
	for i, it := range all {
		msgs[i] = it.msg
		if it.Resends > 0 {
			msgs[i].IdempotencyKey = resendKey(it.Key, it.Resends)
		}
	}
	res, err := r.c.SendBurst(sendCtx, head.From, msgs...)
	fs := make([]finished, len(all))
	failed := false // the outcome of the first item not accepted is err's
	for i, it := range all {
		fs[i].it = it
		var ri *cloudapi.Result
		if i < len(res) {
			ri = res[i]
		}
		switch {
		case ri != nil && ri.MessageID != "":
			fs[i].res = ri
		case !failed:
			fs[i].res, fs[i].err = ri, err
			if err == nil {
				fs[i].err = errors.New("outbox: run: the burst ended without an answer for this message")
			}
			failed = true
		default:
			fs[i].err, fs[i].cut = errBurstCut, true
		}
	}
	f := fs[0]
	f.rest = fs[1:]
	return f
}

// errBurstCut is the error of a burst's item not sent because one before
// it failed (the Client sends no bubble after a hole).
var errBurstCut = errors.New("outbox: run: not sent: an earlier message of its burst was not accepted")

// check decides what to do with a picked item (and the rest of its
// burst): send it now (true), or not (it was held until a known wait
// ends, or dropped). A burst is checked, held and dropped as one.
func (r *runner) check(ctx context.Context, tx *sql.Tx, now time.Time, it *claimed) ([]Event, bool, error) {
	o := r.o
	all := append([]*claimed{it}, it.rest...)
	for _, b := range all {
		if !b.ExpiresAt.IsZero() && !now.Before(b.ExpiresAt) {
			e, err := r.dropAll(ctx, tx, now, it, StateExpired, 0, "freshness deadline passed while queued")
			return e, false, err
		}
	}
	// Known waits: the Client's read-only admission query (the pair's debt
	// or hold, the number's hold, the call budget's), asked of the limits
	// the send will meet. The lane waits on the clock holding no send. A
	// store error is left to the send, which fails closed on it.
	if !it.pair.IsZero() {
		if err := r.seedLane(ctx, tx, now, it); err != nil {
			return nil, false, err
		}
	}
	ready, code := now, errcodes.Code(0)
	if a, err := r.c.Admission(now, it.From, it.To, len(all)); err == nil {
		ready, code = a.At, a.Code
	}
	if ready.After(now) {
		for _, b := range all {
			if !b.ExpiresAt.IsZero() && ready.After(b.ExpiresAt) {
				e, err := r.dropAll(ctx, tx, now, it, StateExpired, int(code),
					fmt.Sprintf("its lane is held for %v, past its deadline", ready.Sub(now)))
				return e, false, err
			}
		}
		_, err := o.exec(ctx, tx, sqlHold, nanos(ready), it.id)
		return nil, false, err
	}
	for _, b := range all {
		if o.cfg.window > 0 && freeForm(cloudapi.Kind(b.Kind)) { // (the stored kind: a single item is not decoded yet)
			var last int64
			err := o.queryRow(ctx, tx, sqlWindow, b.From, b.To).Scan(&last)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, false, err
			}
			if last == 0 || !now.Before(fromNanos(last).Add(o.cfg.window)) {
				e, err := r.dropAll(ctx, tx, now, it, StateFailed, int(errcodes.ReEngagement),
					"outside the customer service window (131047): not sent")
				return e, false, err
			}
		}
		if o.cfg.revalidate != nil {
			if err := o.cfg.revalidate(ctx, b.Item); err != nil {
				st := StateFailed
				if errors.Is(err, ErrExpired) {
					st = StateExpired
				}
				e, derr := r.dropAll(ctx, tx, now, it, st, 0, "revalidation: "+err.Error())
				return e, false, derr
			}
		}
	}
	return nil, true, nil
}

// finish records the outcomes of finished sends.
func (r *runner) finish(ctx, sendCtx context.Context, fs []finished) error {
	if len(fs) == 0 {
		return nil
	}
	o := r.o
	// Recorded, these sends are over; not recorded (a database error),
	// they are kept, still in flight with their leases renewed, and
	// recorded by the next drain. (Recording twice is harmless: each
	// update applies only to an item this Run still has sending.)
	recorded := false
	defer func() {
		if !recorded {
			r.unrecorded = fs
			return
		}
		for _, f := range fs {
			delete(r.inflight, f.it.Key)
		}
	}()
	now := o.cfg.clock.Now()
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("outbox: run: %w", err)
	}
	defer tx.Rollback()
	r.txMoves = r.newMoveLog()
	defer func() { r.txMoves = nil }()
	evs, err := r.record(ctx, tx, sendCtx, now, fs)
	if err == nil {
		err = r.flushMoves(ctx, tx)
	}
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("outbox: run: %w", err)
	}
	recorded = true
	r.ckpt.moved(len(fs))
	o.notify(evs)
	return nil
}

// putBack queues again the items a claim transaction whose commit failed
// may have claimed: their sends never started, so they go back to their
// lane's head with their attempt uncounted (nothing happens to those the
// failed transaction did not claim).
func (r *runner) putBack(ctx context.Context, now time.Time) error {
	if len(r.uncertain) == 0 {
		return nil
	}
	o := r.o
	const why = "claim not confirmed by the database: never sent, queued again"
	args := append([]any{nanos(now), nanos(now), why, r.owner}, r.uncertain...)
	if _, err := o.db.ExecContext(ctx, o.q(`UPDATE outbox_items SET state = 'queued', state_at = ?, due_at = ?, reason = ?,
		lease_until = 0, attempts = attempts - 1 WHERE state = 'sending' AND owner = ? AND ikey IN (?`+strings.Repeat(", ?", len(r.uncertain)-1)+`)`), args...); err != nil {
		return fmt.Errorf("outbox: run: putting back unconfirmed claims: %w", err)
	}
	r.uncertain = nil
	return nil
}

// record records the outcomes fs in tx, and returns their events.
func (r *runner) record(ctx context.Context, tx *sql.Tx, sendCtx context.Context, now time.Time, fs []finished) ([]Event, error) {
	if len(fs) == 0 {
		return nil, nil
	}
	// A burst's items are recorded one by one, in their order.
	var all []finished
	for _, f := range fs {
		all = append(all, f)
		all = append(all, f.rest...)
	}
	var evs []Event
	done, err := r.acceptAll(ctx, tx, now, all)
	if err != nil {
		return nil, err
	}
	requeued := map[string]bool{} // bursts whose failed item went back to the queue
	for _, f := range all {
		if done[f.it.Key] {
			continue
		}
		var e []Event
		var err error
		switch {
		case f.cut && requeued[f.it.burstKey]:
			e, err = r.requeue(ctx, tx, now, now, f.it.Key, "not sent: an earlier message of its burst went back to the queue", true)
		case f.cut:
			e, err = r.setState(ctx, tx, now, f.it.Key, StateFailed, 0, errBurstCut.Error(), "")
		default:
			e, err = r.outcome(ctx, tx, sendCtx, now, f)
			if len(e) == 1 && e[0].State == StateQueued && f.it.burstKey != "" {
				requeued[f.it.burstKey] = true
			}
		}
		if err != nil {
			return nil, err
		}
		evs = append(evs, e...)
	}
	for _, f := range all {
		if done[f.it.Key] {
			evs = append(evs, events(now, StateAccepted, "", f.it.Key)...)
		}
	}
	return evs, nil
}

// acceptSQL records accepted sends, in one statement for any number:
// SQLite reads the keys and wamids as a JSON object (key -> wamid: no
// function call in the statement, see orFail), Postgres as two arrays.
func acceptSQL(d dialect) string {
	if d.postgres {
		return `UPDATE outbox_items AS i SET state = 'accepted', state_at = ?, code = 0, reason = '', lease_until = 0, wamid = j.w, moves = i.moves + 1
			FROM unnest(?::text[], ?::text[]) AS j(k, w) WHERE i.ikey = j.k AND i.owner = ? AND i.state = 'sending'
			RETURNING i.ikey, i.id, i.sender, i.state, i.state_at, i.reason`
	}
	// "+state": the index of sending items does not answer this (it
	// would be scanned whole, reading the list once per item): each key
	// is looked up in the key index.
	// It returns the ids it moved (acceptMoved knows the rest).
	return `UPDATE OR FAIL outbox_items SET state = 'accepted', state_at = ?, code = 0, reason = '', lease_until = 0, wamid = j.value,
		moves = moves + 1 FROM json_each(?) AS j WHERE outbox_items.ikey = j.key AND outbox_items.owner = ? AND +outbox_items.state = 'sending'
		RETURNING id`
}

// acceptAll records the accepted sends among fs in one statement, and
// returns the keys it recorded; the others, and any whose claim this Run
// lost, are left to outcome.
func (r *runner) acceptAll(ctx context.Context, tx *sql.Tx, now time.Time, fs []finished) (map[string]bool, error) {
	o := r.o
	var as []acceptRef
	for _, f := range fs {
		// A held send records its sub-state one by one (outcome).
		if f.err == nil && f.res != nil && f.res.MessageID != "" && !f.res.Held() {
			as = append(as, acceptRef{id: f.it.id, key: f.it.Key, sender: f.it.From, wamid: f.res.MessageID})
		}
	}
	done := make(map[string]bool, len(as))
	if len(as) == 0 {
		return done, nil
	}
	got, err := o.acceptMoved(ctx, tx, r.txMoves, nanos(now), r.owner, as)
	if err != nil {
		return nil, fmt.Errorf("outbox: run: %w", err)
	}
	for _, k := range got {
		done[k] = true
	}
	return done, nil
}

func (r *runner) outcome(ctx context.Context, tx *sql.Tx, sendCtx context.Context, now time.Time, f finished) ([]Event, error) {
	key := f.it.Key
	if f.err == nil {
		wamid := ""
		if f.res != nil {
			wamid = f.res.MessageID
		}
		return r.setState(ctx, tx, now, key, StateAccepted, 0, acceptedReason(f.res), wamid)
	}
	if errors.Is(f.err, errUnreadable) {
		// Claimed, never sent: it fails as it would have at the pick.
		return r.setState(ctx, tx, now, key, StateFailed, 0, reasonUnreadable, "")
	}
	code := 0
	var ge *errcodes.Error
	if errors.As(f.err, &ge) {
		code = int(ge.Code)
	}
	reason := errcodes.Sanitize(f.err.Error())
	var bp *cloudapi.BackpressureError
	switch st := cloudapi.StateOf(f.err); {
	case st == cloudapi.StateAccepted:
		// A duplicate of a send the Client already saw accepted.
		wamid := ""
		if f.res != nil {
			wamid = f.res.MessageID
		}
		return r.setState(ctx, tx, now, key, StateAccepted, 0, "", wamid)
	case errors.Is(f.err, cloudapi.ErrInProgress):
		// The Client refused it locally, writing nothing: a send with its
		// key is still in progress in this process (another Run's, whose
		// claim this Run took over). Not sent: it goes back to its lane's
		// head, its attempt uncounted, and tries again shortly; once that
		// send has ended, the Client answers with its outcome.
		return r.requeue(ctx, tx, now, now.Add(retryAfterInProgress), key, "not sent: a send with its key is in progress in this process", true)
	case st == cloudapi.StateSubmittedUnknown:
		return r.setState(ctx, tx, now, key, StateSubmittedUnknown, code, reason, "")
	case st == cloudapi.StateFailed:
		return r.setState(ctx, tx, now, key, StateFailed, code, reason, "")
	case errors.As(f.err, &bp):
		// The Client could not send it before its deadline.
		return r.setState(ctx, tx, now, key, StateExpired, int(bp.Code), "not sent before its deadline: "+reason, "")
	case st == cloudapi.StateRefused && f.it.Attempts < maxDispatches:
		// Meta refused it for a limit on every attempt: not sent.
		due := now.Add(retryAfterRefusals)
		if !f.it.ExpiresAt.IsZero() && due.After(f.it.ExpiresAt) {
			return r.setState(ctx, tx, now, key, StateExpired, code, "refused for a limit on every attempt until its deadline: "+reason, "")
		}
		return r.requeue(ctx, tx, now, due, key, "refused for a limit on every attempt: "+reason, false)
	case st == cloudapi.StateNotSubmitted && sendCtx.Err() != nil:
		return r.requeue(ctx, tx, now, now, key, "run stopped before the request was written", true)
	case st == cloudapi.StateNotSubmitted && errors.Is(f.err, cloudapi.ErrIdempotencyMemoryFull):
		// The Client refused it locally, writing nothing: the keys of its
		// sends in flight fill its idempotency memory. Nothing is wrong
		// with the message: it goes back to its lane's head, its attempt
		// uncounted, and tries again once some of those sends have ended.
		return r.requeue(ctx, tx, now, now.Add(retryAfterInProgress), key, "not sent: "+reason, true)
	case st == cloudapi.StateNotSubmitted && errors.Is(f.err, errFenced):
		// The lease's fence refused its body (this worker was slow to
		// renew, or is stopping): never written, so it goes back to its
		// lane's head at once, its attempt uncounted. (If another worker
		// took the claim over meanwhile, this update applies to nothing.)
		// The reason is the fence's alone: the instant it names (the row's
		// time says when) and the Client's attempts would make each of a
		// run of such bounces look new to foldBounce.
		return r.requeue(ctx, tx, now, now, key, reasonFenced, true)
	case st == cloudapi.StateNotSubmitted && errors.Is(f.err, errNotMarked):
		// Its write mark could not be committed (the database is
		// failing, or the claim was lost): never written, so it goes
		// back to its lane's head at once, its attempt uncounted.
		return r.requeue(ctx, tx, now, now, key, "not sent: "+reason, true)
	case st == cloudapi.StateNotSubmitted && f.it.Attempts < maxDispatches:
		// Nothing reached Meta (the connection could not be made): try
		// again later.
		due := now.Add(retryAfterRefusals)
		if !f.it.ExpiresAt.IsZero() && due.After(f.it.ExpiresAt) {
			return r.setState(ctx, tx, now, key, StateExpired, code, "not submitted before its deadline: "+reason, "")
		}
		return r.requeue(ctx, tx, now, due, key, "not submitted: "+reason, false)
	default:
		return r.setState(ctx, tx, now, key, StateFailed, code, "not sent: "+reason, "")
	}
}

// seedPairs replays the recent sends recorded in the database into the
// Client's pair limiter, so that a restarted process does not send to a
// pair still in debt from before (131056). It does so once per Outbox and
// pair limiter: the sends of its later Runs with the same Client went
// through the limiter already, and replaying them again would count them
// twice.
func (r *runner) seedPairs(ctx context.Context, now time.Time) error {
	o := r.o
	pairs := r.c.PairLimiter()
	o.seedMu.Lock()
	defer o.seedMu.Unlock()
	sd := o.seedingOf(pairs)
	if sd.all {
		return nil
	}
	p := pairs.Policy()
	since := now.Add(-time.Duration(p.Burst+1) * p.Interval)
	rows, err := o.db.QueryContext(ctx, o.q(`SELECT sender, recipient, sent_at FROM outbox_items
		WHERE sent_at >= ? AND recipient <> '' AND state NOT IN ('queued', 'expired') AND NOT `+sqlNeverWritten+` ORDER BY sent_at`), nanos(since), nanos(now))
	if err != nil {
		return fmt.Errorf("outbox: run: reading recent sends: %w", err)
	}
	defer rows.Close()
	type send struct {
		pr pairlimit.Pair
		at int64
	}
	var sends []send
	for rows.Next() {
		var from, to string
		var at int64
		if err := rows.Scan(&from, &to, &at); err != nil {
			return fmt.Errorf("outbox: run: reading recent sends: %w", err)
		}
		if pr, err := pairlimit.NewPair(from, to); err == nil {
			sends = append(sends, send{pr, at})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("outbox: run: reading recent sends: %w", err)
	}
	// Only once every row is read: a failed read seeds nothing, and the
	// next Run tries again.
	for _, s := range sends {
		pairs.ReserveN(fromNanos(s.at), s.pr, 1)
		sd.lanes[s.pr.From()+">"+s.pr.To()] = s.at
	}
	sd.all = true
	return nil
}

// seedLane, with Postgres, feeds the pair limiter the lane's latest send
// by another worker (a burst: all its bubbles), so that a lane taken over
// from another worker keeps its pace.
func (r *runner) seedLane(ctx context.Context, ex execer, now time.Time, it *claimed) error {
	o := r.o
	if !o.d.postgres {
		return nil
	}
	pairs := r.c.PairLimiter()
	o.seedMu.Lock()
	defer o.seedMu.Unlock()
	sd := o.seedingOf(pairs)
	if at := it.otherSent; at > 0 && at > sd.lanes[it.lane] {
		n, err := r.otherSends(ctx, ex, now, it.lane, at)
		if err != nil {
			return fmt.Errorf("reading the lane's latest send: %w", err)
		}
		pairs.ReserveN(fromNanos(at), it.pair, min(n, pairs.BurstCap()))
		sd.lanes[it.lane] = at
	}
	return nil
}

// resendKey is the idempotency key (and biz_opaque_callback_data) of the
// n-th resend of the item keyed key.
func resendKey(key string, n int) string { return key + "#r" + strconv.Itoa(n) }

// baseKey strips a resend suffix from a key.
func baseKey(k string) string {
	i := strings.LastIndex(k, "#r")
	if i < 0 || i+2 == len(k) {
		return k
	}
	for _, c := range k[i+2:] {
		if c < '0' || c > '9' {
			return k
		}
	}
	return k[:i]
}
