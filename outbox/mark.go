package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/wapace/wapace/internal/writemark"
)

// WithWriteMarks makes Run commit a durable "about to write" mark for each
// message right before the first byte of its request's body may leave
// (after the Client's last check of the connection and of the message's
// slot; the request's headers may have left, but Meta cannot act on a
// message without its body), so that after a crash (kill -9, a lost machine) a claim whose request
// provably never left is queued again automatically once its lease ends,
// at the head of its lane and its attempt uncounted, instead of becoming
// submitted_unknown. A claim whose mark was committed becomes
// submitted_unknown as without the option, and is never resent blindly:
// the mark says only that the request may have left. The items of a
// burst are queued again only if none of them was marked. A mark needs
// the claim's live lease, and after the mark the lease's fence (see
// WithLease) still stops a worker paused or stalled past it from writing.
// The pair of a
// claim that provably never left is not charged for it by the worker
// that takes it over.
//
// The marks of the sends in flight share their commits (group commit),
// but each batch of writes costs one more commit: on SQLite, dispatch took
// 1.3 to 1.5 times the CPU per message with marks (BenchmarkSQLiteWriteMarks,
// BENCHMARKS.md), which is why the option is off by default. Turn it on
// where crashes are common and an unknown outcome costs more than that
// (each one must be settled by a status webhook, a ResendPolicy or an
// operator). The marks are as durable as the outbox's other records (with
// SQLite's synchronous(NORMAL), a process crash loses none; a power loss
// may). Workers with and without the option may share an outbox: the
// claims of a worker without it are recovered as before, whoever sweeps
// them.
func WithWriteMarks() Option {
	return func(c *config) error {
		c.marks = true
		return nil
	}
}

// Write marks (WithWriteMarks): after a crash, a claim whose request may
// have reached Meta must never be sent again blindly (its item becomes submitted_unknown),
// but most dead claims were still waiting for their slot, or for a
// connection, when their worker died: sending them again is safe, if only
// it can be proved that their requests never left.
//
// So a claim made with marks records, with its sent_at, that its request is not written
// yet (unwritten_at = sent_at), and the Client, right before it may write
// the first byte of a message's body (its connection is ready, its slot
// checked), calls the mark of the send's context (internal/writemark):
// Run commits unwritten_at = 0 for the item, and the Client writes only
// once that commit has returned. A dead claim still unwritten therefore
// provably never reached Meta: the sweep queues it again, at the head of
// its lane, its attempt uncounted; any other dead claim becomes
// submitted_unknown as before. (A claim made by a worker that does not
// mark, such as one of an earlier version still running during an
// upgrade, leaves unwritten_at alone: it is never equal to the new
// sent_at, and the claim's outcome is unknown.)
//
// The marks of the sends in flight are committed together (group
// commit): the first to come leads, commits the marks waiting then in one
// statement, hands the lead to the next waiting, and releases its batch;
// a send waits at most one commit behind another.
//
// A burst is recovered as a whole: its unwritten items are queued again
// only if none of its items was marked (the Client sends no bubble after
// one whose outcome is unknown, and neither does recovery).

// errNotMarked wraps the error of a write mark that could not be
// committed: the request was not written.
var errNotMarked = errors.New("outbox: run: the request's write mark was not committed: not written")

// markGroup coalesces the write marks of a Run's sends into shared
// statements.
type markGroup = commitQueue[*markCall]

// markCall is one mark waiting in a markGroup.
type markCall struct {
	id int64
	turn
	err error // set by its batch's leader
}

func (c *markCall) turnOf() *turn { return &c.turn }

// markFunc is the write mark of the sends of claimed items all: it commits
// the mark of the item whose (sent) key is given.
func (r *runner) markFunc(all []*claimed) writemark.Func {
	ids := make(map[string]int64, len(all))
	for _, it := range all {
		k := it.Key
		if it.Resends > 0 {
			k = resendKey(it.Key, it.Resends)
		}
		ids[k] = it.id
	}
	return func(ctx context.Context, key string) error {
		id, ok := ids[key]
		if !ok {
			return nil // not one of the items: nothing of ours to mark
		}
		return r.mark(ctx, id)
	}
}

// mark commits the write mark of the item id, claimed by this Run, and
// returns nil once it is committed; an error if it could not be (the
// request must not be written), or if the claim was lost (this Run's
// lease ended, and another worker may have taken the item over).
func (r *runner) mark(ctx context.Context, id int64) error {
	c := &markCall{id: id}
	g := &r.marks
	lead := g.join(c)
	if !lead {
		// A call whose ctx ends in a batch leaves it: its batch may
		// commit the mark, but the request is not written all the same
		// (a mark says only "may have been written").
		var err error
		if lead, err = g.await(ctx, c, func(bool) bool { return false }); err != nil {
			return err
		}
	}
	if lead {
		r.leadMarks(ctx, c)
	}
	return c.err
}

// leadMarks commits the marks waiting (lc's among them) in one statement,
// hands the lead on and releases the batch.
func (r *runner) leadMarks(ctx context.Context, lc *markCall) {
	g := &r.marks
	batch := g.take(0)
	ids := make([]int64, len(batch))
	for i, c := range batch {
		ids[i] = c.id
	}
	marked, err := r.markIDs(ctx, ids)
	for _, c := range batch {
		switch {
		case err != nil:
			c.err = fmt.Errorf("%w: %w", errNotMarked, err)
		case !marked[c.id]:
			c.err = fmt.Errorf("%w: the claim was lost (its lease ended, and another worker may take the item over)", errNotMarked)
		}
	}
	g.release(lc, batch)
}

// sqlMark commits the write marks of the listed items this Run still has
// sending under a live lease (a claim whose lease ended is never marked,
// so that its request provably never leaves: see takeover.go); sqlMarked
// reads which of them are marked.
func sqlMark(d dialect) string {
	return `UPDATE outbox_items SET unwritten_at = 0 WHERE state = 'sending' AND owner = ? AND lease_until >= ? AND id ` + d.inList("bigint")
}

func sqlMarked(d dialect) string {
	return `SELECT id FROM outbox_items WHERE state = 'sending' AND owner = ? AND unwritten_at = 0 AND id ` + d.inList("bigint")
}

// markIDs commits the write marks of ids and returns those it marked. The
// marks are one statement in a transaction of its own (autocommit: it has
// committed once Exec has returned without error). Should it not mark
// them all (a claim was lost), it reads which it marked.
func (r *runner) markIDs(ctx context.Context, ids []int64) (map[int64]bool, error) {
	o := r.o
	list := listArg(o.d, ids)
	res, err := o.exec(ctx, o.db, sqlMark(o.d), r.owner, nanos(o.cfg.clock.Now()), list)
	if err != nil {
		return nil, err
	}
	marked := make(map[int64]bool, len(ids))
	if n, err := res.RowsAffected(); err == nil && n == int64(len(ids)) {
		for _, id := range ids {
			marked[id] = true
		}
		return marked, nil
	}
	got, err := o.queryIDs(ctx, o.db, sqlMarked(o.d), r.owner, list)
	if err != nil {
		return nil, err
	}
	for _, id := range got {
		marked[id] = true
	}
	return marked, nil
}

// queryIDs runs a query returning ids.
func (o *Outbox) queryIDs(ctx context.Context, ex execer, query string, args ...any) ([]int64, error) {
	rows, err := o.query(ctx, ex, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// The sweep of dead claims whose requests provably never left (see
// above): queued again, due now, their attempt uncounted. It runs before
// sqlSweepDead, which makes the other dead claims submitted_unknown.
const sqlSweepUnwritten = `UPDATE outbox_items SET state = 'queued', state_at = ?, due_at = ?, reason = ?, lease_until = 0,
		attempts = attempts - 1, unwritten_at = 0
	WHERE state = 'sending' AND owner <> ? AND lease_until < ? AND unwritten_at <> 0 AND unwritten_at = sent_at
	AND (burst = '' OR NOT EXISTS (SELECT 1 FROM outbox_items b WHERE b.lane = outbox_items.lane AND b.burst = outbox_items.burst
		AND b.state = 'sending' AND b.owner = outbox_items.owner AND (b.unwritten_at = 0 OR b.unwritten_at <> b.sent_at)))
	RETURNING ikey`

// Schema: unwritten_at, the sent_at of the claim whose request provably
// has not been written yet (0: none). A forward migration of its own, so
// that it can be renumbered.
const migrateUnwritten = `ALTER TABLE outbox_items ADD COLUMN unwritten_at BIGINT NOT NULL DEFAULT 0;`
