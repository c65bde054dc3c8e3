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

// Snapshot counts the items per state, the live lanes and the deepest
// one, the oldest queued item and the dead letters. It changes nothing;
// with a large queue it reads every live row.
func (o *Outbox) Snapshot(ctx context.Context) (Stats, error) {
	if o.isClosed() {
		return Stats{}, ErrClosed
	}
	s := Stats{At: o.cfg.clock.Now(), Counts: map[State]int{}}
	rows, err := o.db.QueryContext(ctx, `SELECT state, COUNT(*) FROM outbox_items GROUP BY state`)
	if err != nil {
		return s, fmt.Errorf("outbox: snapshot: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			return s, fmt.Errorf("outbox: snapshot: %w", err)
		}
		if st, ok := parseState(name); ok {
			s.Counts[st] = n
		}
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("outbox: snapshot: %w", err)
	}
	s.DeadLetters = s.Counts[StateFailed] + s.Counts[StateExpired]
	var deepest, oldest sql.NullInt64
	err = o.db.QueryRowContext(ctx, `SELECT COUNT(*), MAX(n) FROM (SELECT lane, COUNT(*) AS n FROM outbox_items
		WHERE state IN ('queued', 'sending') GROUP BY lane) AS lanes`).Scan(&s.Lanes, &deepest)
	if err != nil {
		return s, fmt.Errorf("outbox: snapshot: %w", err)
	}
	s.DeepestLane = int(deepest.Int64)
	if err := o.db.QueryRowContext(ctx, `SELECT MIN(enqueued_at) FROM outbox_items WHERE state = 'queued'`).Scan(&oldest); err != nil {
		return s, fmt.Errorf("outbox: snapshot: %w", err)
	}
	s.OldestQueued = fromNanos(oldest.Int64)
	return s, nil
}
