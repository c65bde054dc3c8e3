package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// Transitions in batches (schema version 6).
//
// Every change of an item's state appends a row to outbox_history and
// moves one unit between two counters of outbox_counts. Up to version 5
// a trigger did both for every row: on SQLite four statements per
// transition (the history row, and three on the counters), more than half
// of what a batch's claim and acceptances cost.
//
// SQLite: the statements of the hot path (a batch's claim, its
// acceptances) mark the rows they move (moves = moves + 1), which the
// trigger skips, and return what the trigger would have read (the item's
// id, sender and new state, state_at and reason: movedColumns); moved
// then writes the batch's history in one INSERT per distinct (state, at,
// reason) and its counters in one statement per state it leaves or
// enters, whatever the batch's size. Every other change of state (the
// rare ones: sweeps, failures, requeues, the operator's, Reconcile's, a
// caller's own UPDATE) leaves moves alone and stays the trigger's, so
// that code changing states with its own UPDATEs still keeps the counters
// right.
//
// Postgres: the same statements, each wrapped into one (pgMoved) whose
// common table expressions write the history and the counter deltas of
// the rows the UPDATE returns: no trigger runs, no round trip is added.
// The trigger skips them as on SQLite (WHEN (NEW.moves = OLD.moves)): a
// worker of version 5 still running beside, which leaves moves alone, has
// its transitions recorded by the trigger as before.

// movedColumns are the columns that an UPDATE recording its own
// transitions returns (after the key, if it returns keys).
const movedColumns = `id, sender, state, state_at, reason`

// claimMoved runs claimSQL and records its transitions (queued ->
// sending) of the want items listed. It fails if not every listed item was queued (claimSQL
// moves only those): the caller would send an item it did not claim, and
// the transitions recorded must leave queued.
func (o *Outbox) claimMoved(ctx context.Context, tx *sql.Tx, want int, args ...any) error {
	var n int
	if o.d.postgres {
		if err := o.queryRow(ctx, tx, pgClaimMoved, args...).Scan(&n); err != nil {
			return err
		}
	} else {
		var err error
		if n, err = o.movedN(ctx, tx, StateQueued, claimSQL(o.d), args...); err != nil {
			return err
		}
	}
	if n != want {
		return fmt.Errorf("%w: %d of the %d items claimed were no longer queued", ErrWrongState, want-n, want)
	}
	return nil
}

// acceptMoved runs acceptSQL, records its transitions (sending ->
// accepted), and returns the keys it moved.
func (o *Outbox) acceptMoved(ctx context.Context, tx *sql.Tx, args ...any) ([]string, error) {
	if o.d.postgres {
		return o.queryKeys(ctx, tx, pgAcceptMoved, args...)
	}
	return o.moved(ctx, tx, StateSending, true, acceptSQL(o.d), args...)
}

// The Postgres statements of claimMoved and acceptMoved. Leaving sending
// wakes the other workers (a lane is free), as the trigger's
// notification did.
var (
	pgClaimMoved  = pgMoved(claimSQL(dialect{postgres: true}), StateQueued, `SELECT COUNT(*) FROM u`)
	pgAcceptMoved = pgMoved(acceptSQL(dialect{postgres: true}), StateSending,
		`SELECT u.ikey FROM u CROSS JOIN (SELECT pg_notify('wapace_outbox', '')) AS n`)
)

// pgMoved wraps update, a Postgres UPDATE moving items out of state from
// and returning movedColumns (after the key, if any), into one statement
// that writes their history and counter deltas (one per number and state)
// and ends with final, a query of u (the moved rows).
func pgMoved(update string, from State, final string) string {
	return `WITH u AS (` + update + `),
	h AS (INSERT INTO outbox_history (item, at, state, reason) SELECT id, state_at, state, reason FROM u ORDER BY id),
	d AS (INSERT INTO outbox_count_deltas (sender, state, d)
		SELECT sender, state, COUNT(*) FROM u GROUP BY sender, state
		UNION ALL SELECT sender, '` + from.String() + `', -COUNT(*) FROM u GROUP BY sender)
	` + final
}

// move is one transition read back from a statement's RETURNING clause.
type move struct {
	id     int64
	sender string
	state  string
	at     int64
	reason string
}

// moved (SQLite) runs query, an UPDATE in tx that moves items out of
// state from, sets moves = moves + 1 and returns movedColumns (preceded
// by the item's key with keyed), and records its transitions. It returns
// the keys.
func (o *Outbox) moved(ctx context.Context, tx *sql.Tx, from State, keyed bool, query string, args ...any) ([]string, error) {
	keys, _, err := o.movedKeys(ctx, tx, from, keyed, query, args...)
	return keys, err
}

// movedN is moved for a statement returning no keys: it returns how many
// items it moved.
func (o *Outbox) movedN(ctx context.Context, tx *sql.Tx, from State, query string, args ...any) (int, error) {
	_, n, err := o.movedKeys(ctx, tx, from, false, query, args...)
	return n, err
}

// movedKeys is moved, also returning how many items were moved.
func (o *Outbox) movedKeys(ctx context.Context, tx *sql.Tx, from State, keyed bool, query string, args ...any) ([]string, int, error) {
	rows, err := o.query(ctx, tx, query, args...)
	if err != nil {
		return nil, 0, err
	}
	var keys []string
	var ms []move
	for rows.Next() {
		var m move
		var key string
		dest := []any{&m.id, &m.sender, &m.state, &m.at, &m.reason}
		if keyed {
			dest = append([]any{&key}, dest...)
		}
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return nil, 0, err
		}
		if keyed {
			keys = append(keys, key)
		}
		ms = append(ms, m)
	}
	if err := rows.Close(); err != nil {
		return nil, 0, err
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return keys, len(ms), o.recordMoves(ctx, tx, from.String(), ms)
}

// The statements of recordMoves: json_each reads a list (the history's
// items) or an object (sender -> count); no SQL function is called (see
// orFail).
const (
	sqlMoveHistory = `INSERT OR FAIL INTO outbox_history (item, at, state, reason) SELECT value, ?, ?, ? FROM json_each(?)`
	sqlMoveLeave   = `UPDATE OR FAIL outbox_counts SET n = n - j.value FROM json_each(?) AS j
		WHERE outbox_counts.sender = j.key AND outbox_counts.state = ?`
	sqlMoveEnter = `UPDATE OR FAIL outbox_counts SET n = n + j.value FROM json_each(?) AS j
		WHERE outbox_counts.sender = j.key AND outbox_counts.state = ?`
	sqlMoveCreate = `INSERT OR FAIL INTO outbox_counts (sender, state, n) SELECT j.key, ?, j.value FROM json_each(?) AS j
		WHERE NOT EXISTS (SELECT 1 FROM outbox_counts c WHERE c.sender = j.key AND c.state = ?)`
)

// moveSQL are recordMoves's statements, prepared with the hot ones.
var moveSQL = []string{sqlMoveHistory, sqlMoveLeave, sqlMoveEnter, sqlMoveCreate}

// recordMoves (SQLite) writes what the trigger would have written for
// each of ms, moved out of state from in tx: its history row, and its
// counters.
func (o *Outbox) recordMoves(ctx context.Context, tx *sql.Tx, from string, ms []move) error {
	if len(ms) == 0 {
		return nil
	}
	type entry struct {
		state  string
		at     int64
		reason string
	}
	var order []entry
	items := map[entry][]int64{}
	leave := map[string]int{}
	enter := map[string]map[string]int{}
	for _, m := range ms {
		if m.state == from {
			continue // not a transition (cannot happen: the statements move)
		}
		e := entry{m.state, m.at, m.reason}
		if _, ok := items[e]; !ok {
			order = append(order, e)
		}
		items[e] = append(items[e], m.id)
		leave[m.sender]++
		if enter[m.state] == nil {
			enter[m.state] = map[string]int{}
		}
		enter[m.state][m.sender]++
	}
	for _, e := range order {
		if _, err := o.exec(ctx, tx, sqlMoveHistory, e.at, e.state, e.reason, listArg(o.d, items[e])); err != nil {
			return fmt.Errorf("recording history: %w", err)
		}
	}
	if len(leave) == 0 {
		return nil
	}
	b, _ := json.Marshal(leave) // strings and integers: cannot fail
	if _, err := o.exec(ctx, tx, sqlMoveLeave, string(b), from); err != nil {
		return fmt.Errorf("counting: %w", err)
	}
	for st, by := range enter {
		b, _ := json.Marshal(by)
		res, err := o.exec(ctx, tx, sqlMoveEnter, string(b), st)
		if err != nil {
			return fmt.Errorf("counting: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || int(n) < len(by) {
			// A counter not created yet (the first item of a number
			// in this state).
			if _, err := o.exec(ctx, tx, sqlMoveCreate, st, string(b), st); err != nil {
				return fmt.Errorf("counting: %w", err)
			}
		}
	}
	return nil
}
