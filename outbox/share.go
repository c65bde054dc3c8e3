package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

// How Run shares its sends between business numbers.
//
// The pick takes lane heads in due order, so a number whose campaign was
// queued first (EnqueueMany takes one number a call) would fill every
// send Run may have in flight, each waiting for that number's throughput
// slots, while the other numbers' lanes, queued behind, wait too: five
// numbers upgraded to 1,000 msg/s were sent one block at a time. So each
// number with live items gets its share of the sends (what it wants in
// flight, inflight.go, which budget lists the numbers for); a pick
// whose heads belong to numbers at their share sets those aside, the
// numbers under their share are picked on their own, lane by lane from
// where their last such pick ended (every lane has its turn), and the
// sends they leave free go to the heads set aside (a share orders the
// picks; it never leaves a send idle). With one number, its share is the
// whole. (SQLite only for now: on Postgres a
// range of lanes depends on the database's collation; its picks stay in
// due order.)

// sendersEvery is how often Run lists the numbers with live items.
const sendersEvery = 100 * time.Millisecond

// maxSenders bounds the numbers one listing reads.
const maxSenders = 1000

// sqlNextSender is the first number with live items at or after a
// string: one seek in the live index per number (a skip scan; the index
// leads with the sender, schema 7).
const sqlNextSender = `SELECT sender FROM outbox_items INDEXED BY outbox_items_live
	WHERE state IN ('queued', 'sending') AND sender >= ? ORDER BY sender LIMIT 1`

// sqlPickLanes is pickSQL (SQLite) for number from (the first argument)
// and a range of its lanes in the order of their numbers (schema 7),
// given by two lanes' names: above the first's number, up to the
// second's (a name never numbered: below every lane, or above every
// lane, see laneBelow). Its LIMIT is "+?" for the reason pickSQL gives.
const sqlPickLanes = `SELECT i.id, i.ikey, i.sender, i.recipient, i.kind, i.message, i.attempts, i.resends, i.enqueued_at, i.expires_at, i.lane, i.burst, 0
	FROM outbox_items i INDEXED BY outbox_items_live
	WHERE i.state IN ('queued', 'sending') AND i.state = 'queued' AND i.sender = ?
	AND i.lane_no > COALESCE((SELECT l.id FROM outbox_lanes l WHERE l.lane = ?), 0)
	AND i.lane_no <= COALESCE((SELECT l.id FROM outbox_lanes l WHERE l.lane = ?), 9223372036854775807) AND i.due_at <= ?
	AND NOT EXISTS (SELECT 1 FROM outbox_items j WHERE j.sender = i.sender AND j.lane_no = i.lane_no AND j.state IN ('queued', 'sending')
		AND (j.state = 'sending' OR j.seq < i.seq OR (j.seq = i.seq AND j.id < i.id)))
	ORDER BY i.lane_no, i.seq LIMIT +?`

// A lane is from + ">" + recipient (from + ">" for read receipts), and
// from is digits, which sort before '=' , '>' and '?': the lanes of from
// are those above from + "=" and below from + "?", and no other number's.
// Neither name is a lane: as bounds of sqlPickLanes, the first stands
// below all of from's lanes, the second above.
func laneBelow(from string) string { return from + "=" }
func laneAbove(from string) string { return from + "?" }

// listSenders lists the numbers with live items (at most maxSenders).
func (r *runner) listSenders(ctx context.Context, ex execer) ([]string, error) {
	o := r.o
	var senders []string
	at := ""
	for len(senders) < maxSenders {
		var lane string
		err := o.queryRow(ctx, ex, sqlNextSender, at).Scan(&lane)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, err
		}
		from := lane
		for i := range len(lane) {
			if lane[i] == '>' {
				from = lane[:i]
				break
			}
		}
		senders = append(senders, from)
		at = laneAbove(from)
	}
	return senders, nil
}

// share splits picks into those of numbers under their share of the sends
// (busy: the sends in flight by number) and those over it, and returns
// the room each number has left (nil with a single number: all kept).
// The numbers were listed by budget, before the transaction.
func (r *runner) share(picks []*claimed, busy map[string]int) (kept, over []*claimed, room map[string]int) {
	active := slices.Clone(r.senders)
	for _, it := range picks {
		if !slices.Contains(active, it.From) {
			active = append(active, it.From) // enqueued since the listing
		}
	}
	if len(active) <= 1 {
		return picks, nil, nil
	}
	room = make(map[string]int, len(active))
	for _, s := range active {
		room[s] = max(0, r.want(s)-busy[s])
	}
	for _, it := range picks {
		if room[it.From] > 0 {
			room[it.From]--
			kept = append(kept, it)
		} else {
			over = append(over, it)
		}
	}
	return kept, over, room
}

// pickLanes picks up to n due lane heads of number from, lane by lane
// from where its last pick ended, skipping the ids in seen (kept of them
// are from's).
func (r *runner) pickLanes(ctx context.Context, tx *sql.Tx, now time.Time, from string, n, kept int, seen map[int64]bool) ([]*claimed, []string, error) {
	cursor := r.cursors[from]
	if cursor == "" {
		cursor = laneBelow(from)
	}
	var picks []*claimed
	var bad []string
	// From the cursor to the number's last lane, then from its first lane
	// to the cursor.
	for _, span := range [][2]string{{cursor, laneAbove(from)}, {laneBelow(from), cursor}} {
		if len(picks)+len(bad) >= n || span[0] >= span[1] {
			continue
		}
		p, b, err := r.scanPicks(ctx, tx, now, sqlPickLanes, from, span[0], span[1], nanos(now), n-len(picks)-len(bad)+kept)
		if err != nil {
			return nil, nil, err
		}
		for _, it := range p {
			if len(picks)+len(bad) < n && !seen[it.id] {
				seen[it.id] = true
				picks = append(picks, it)
				r.cursors[from] = it.lane
			}
		}
		bad = append(bad, b...)
	}
	return picks, bad, nil
}

// spread applies the numbers' shares to the n lane heads picked (picks,
// and bad: the keys of unreadable ones), then picks more for the numbers
// left under their share while sends are free: the heads to check and
// claim.
func (r *runner) spread(ctx context.Context, tx *sql.Tx, now time.Time, n int, picks []*claimed, bad []string) ([]*claimed, []string, error) {
	busy := map[string]int{}
	for _, it := range r.inflight {
		if !r.ending[it.Key] {
			busy[it.From]++
		}
	}
	picks, over, room := r.share(picks, busy)
	if len(over) == 0 {
		return picks, bad, nil // no number was over its share
	}
	seen := make(map[int64]bool, len(picks))
	kept := map[string]int{}
	for _, it := range picks {
		seen[it.id] = true
		kept[it.From]++
	}
	dropped := make(map[string]bool, len(bad))
	for _, k := range bad {
		dropped[k] = true
	}
	for _, from := range r.senders {
		free := n - len(picks) - len(bad)
		if free <= 0 {
			break
		}
		if room[from] <= 0 {
			continue
		}
		more, b, err := r.pickLanes(ctx, tx, now, from, min(room[from], free), kept[from], seen)
		if err != nil {
			return nil, nil, err
		}
		picks = append(picks, more...)
		for _, k := range b {
			if !dropped[k] {
				dropped[k] = true
				bad = append(bad, k)
			}
		}
	}
	// Sends the other numbers could not use go to those over their share:
	// a share orders the picks, it never leaves a send idle.
	free := max(0, n-len(picks)-len(bad))
	return append(picks, over[:min(free, len(over))]...), bad, nil
}

// scanPicks runs a pick query and reads its rows: the picks, their
// messages not decoded yet (see claimed.decode), and the keys of those
// whose stored message is unreadable (none since the sends decode: an
// unreadable message fails once claimed).
func (r *runner) scanPicks(ctx context.Context, tx *sql.Tx, now time.Time, query string, args ...any) ([]*claimed, []string, error) {
	rows, err := r.o.query(ctx, tx, query, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("outbox: run: claiming: %w", err)
	}
	defer rows.Close()
	var picks []*claimed
	var bad []string
	for rows.Next() {
		it := &claimed{}
		var body string
		if err := it.scan(rows, &body, &it.otherSent); err != nil {
			return nil, nil, fmt.Errorf("outbox: run: claiming: %w", err)
		}
		// (Not decoded here: a single item's send decodes its message,
		// off Run's goroutine, and a burst's head is decoded by claim.)
		it.UpdatedAt, it.body = now, body
		picks = append(picks, it)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("outbox: run: claiming: %w", err)
	}
	return picks, bad, nil
}
