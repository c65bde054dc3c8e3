package outbox

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Stats is a snapshot of the queue.
type Stats struct {
	// At is the instant of the snapshot on the Outbox's clock.
	At time.Time
	// Counts holds the number of items in each state (absent: none).
	Counts map[State]int
	// Lanes is the number of lanes with live (queued or sending) items.
	Lanes int
	// DeepestLane is the most live items in one lane.
	DeepestLane int
	// OldestQueued is when the oldest queued item was enqueued (zero if
	// none is queued); At minus it is the oldest item's age.
	OldestQueued time.Time
	// DeadLetters counts failed and expired items.
	DeadLetters int
}

// Snapshot counts the items per state (from counters the database keeps
// as items change state: a few rows, however large the queue), the live
// lanes and the deepest one, the oldest queued item and the dead
// letters. It changes nothing. The lane figures and the oldest item walk
// the live items' index: with a large queue, call Drain or read Counts
// through it rather than polling Snapshot in a tight loop.
func (o *Outbox) Snapshot(ctx context.Context) (Stats, error) {
	if o.isClosed() {
		return Stats{}, ErrClosed
	}
	s := Stats{At: o.cfg.clock.Now()}
	counts, _, err := o.counts(ctx, o.db)
	if err != nil {
		return s, fmt.Errorf("outbox: snapshot: %w", err)
	}
	s.Counts = counts
	s.DeadLetters = s.Counts[StateFailed] + s.Counts[StateExpired]
	if s.Counts[StateQueued]+s.Counts[StateSending] == 0 {
		return s, nil
	}
	var deepest, oldest sql.NullInt64
	lanes := sqlLanes
	if o.d.postgres {
		lanes = pgLanes
	}
	if err := o.queryRow(ctx, o.db, lanes).Scan(&s.Lanes, &deepest); err != nil {
		return s, fmt.Errorf("outbox: snapshot: %w", err)
	}
	s.DeepestLane = int(deepest.Int64)
	if err := o.queryRow(ctx, o.db, sqlOldest).Scan(&oldest); err != nil {
		return s, fmt.Errorf("outbox: snapshot: %w", err)
	}
	s.OldestQueued = fromNanos(oldest.Int64)
	return s, nil
}

var (
	// The lanes with live items and the deepest's depth: SQLite groups
	// by the live index's key (a lane is a number and a lane number,
	// schema 7), Postgres by the lane.
	sqlLanes = `SELECT COUNT(*), MAX(n) FROM (SELECT sender, lane_no, COUNT(*) AS n FROM outbox_items
		WHERE state IN ('queued', 'sending') GROUP BY sender, lane_no) AS lanes`
	pgLanes = `SELECT COUNT(*), MAX(n) FROM (SELECT lane, COUNT(*) AS n FROM outbox_items
		WHERE state IN ('queued', 'sending') GROUP BY lane) AS lanes`
	sqlOldest = `SELECT MIN(enqueued_at) FROM outbox_items WHERE state = 'queued'`
)
