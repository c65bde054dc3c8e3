package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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
// trigger skips. What the trigger would have read (the item's id, number,
// new state, state_at and reason) the caller knows (the acceptances
// return the ids they moved: another worker may have taken some over),
// and collects in a moveLog; its flush, before the transaction commits,
// writes their history in one INSERT per distinct (at, reason) and their
// counters in one UPDATE, whatever the batch's size: a Run transaction,
// which records acceptances and claims, writes each once. Every other
// change of state (the rare ones: sweeps, failures, requeues, the
// operator's, Reconcile's, a caller's own UPDATE) leaves moves alone and
// stays the trigger's, so that code changing states with its own UPDATEs
// still keeps the counters right.
//
// Postgres: the same statements, each wrapped into one (pgMoved) whose
// common table expressions write the history and the counter deltas of
// the rows the UPDATE returns: no trigger runs, no round trip is added.
// The trigger skips them as on SQLite (WHEN (NEW.moves = OLD.moves)): a
// worker of version 5 still running beside, which leaves moves alone, has
// its transitions recorded by the trigger as before.

// movedColumns are the columns that a Postgres UPDATE recording its own
// transitions returns (after the key, if it returns keys), for pgMoved.
const movedColumns = `id, sender, state, state_at, reason`

// claimRef is an item to claim: its id and number.
type claimRef struct {
	id     int64
	sender string
}

// claimMoved runs claimSQL, claiming items for owner (sending, under a
// lease until lease, sent at at, unwritten_at as given) and records their
// transitions (queued -> sending). It fails if not every item was queued
// (claimSQL moves only those): the caller would send an item it did not
// claim, and the transitions recorded must leave queued. With SQLite
// the transitions go to log, written by its flush before the commit (a
// nil log writes them at once); the statement returns nothing, what it
// moved being known.
func (o *Outbox) claimMoved(ctx context.Context, tx *sql.Tx, log *moveLog, items []claimRef, owner string, lease, at, unwritten int64) error {
	ids := make([]int64, len(items))
	for i, it := range items {
		ids[i] = it.id
	}
	args := []any{owner, lease, at, at, unwritten, listArg(o.d, ids)}
	var n int
	if o.d.postgres {
		if err := o.queryRow(ctx, tx, pgClaimMoved, args...).Scan(&n); err != nil {
			return err
		}
	} else {
		res, err := o.exec(ctx, tx, claimSQL(o.d), args...)
		if err != nil {
			return err
		}
		m, err := res.RowsAffected()
		if err != nil {
			return err
		}
		n = int(m)
	}
	if n != len(items) {
		return fmt.Errorf("%w: %d of the %d items claimed were no longer queued", ErrWrongState, len(items)-n, len(items))
	}
	if o.d.postgres {
		return nil
	}
	return logged(ctx, o, tx, log, func(l *moveLog) {
		for _, it := range items {
			l.add(it.id, it.sender, "queued", "sending", at, "")
		}
	})
}

// acceptRef is an accepted send to record: its item's id, key and number,
// and its wamid.
type acceptRef struct {
	id                 int64
	key, sender, wamid string
}

// acceptMoved runs acceptSQL, recording the acceptance at at of items
// sent by owner and still sending, records their transitions (sending ->
// accepted; with SQLite in log, as claimMoved does), and returns the
// keys it moved. (The others were lost: another worker marked them
// submitted_unknown.)
func (o *Outbox) acceptMoved(ctx context.Context, tx *sql.Tx, log *moveLog, at int64, owner string, items []acceptRef) ([]string, error) {
	if o.d.postgres {
		keys, wamids := make([]string, len(items)), make([]string, len(items))
		for i, it := range items {
			keys[i], wamids[i] = it.key, it.wamid
		}
		return o.queryKeys(ctx, tx, pgAcceptMoved, at, keys, wamids, owner)
	}
	// SQLite reads the keys and wamids as one JSON object (key -> wamid),
	// and returns the ids it moved.
	pairs := make(map[string]string, len(items))
	byID := make(map[int64]int, len(items))
	for i, it := range items {
		pairs[it.key] = it.wamid
		byID[it.id] = i
	}
	b, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	rows, err := o.query(ctx, tx, acceptSQL(o.d), at, string(b), owner)
	if err != nil {
		return nil, err
	}
	var moved []int
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		i, ok := byID[id]
		if !ok {
			rows.Close()
			return nil, fmt.Errorf("accepting: item %d was not listed", id) // cannot happen: the statement moves listed keys
		}
		moved = append(moved, i)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	keys := make([]string, len(moved))
	for k, i := range moved {
		keys[k] = items[i].key
	}
	return keys, logged(ctx, o, tx, log, func(l *moveLog) {
		for _, i := range moved {
			l.add(items[i].id, items[i].sender, "sending", "accepted", at, "")
		}
	})
}

// logged adds transitions to log with add, or, with a nil log, writes
// them at once in tx.
func logged(ctx context.Context, o *Outbox, tx *sql.Tx, log *moveLog, add func(*moveLog)) error {
	if log != nil {
		add(log)
		return nil
	}
	l := &moveLog{}
	add(l)
	return l.flush(ctx, o, tx)
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

// moveLog (SQLite) collects the transitions that a transaction's hot
// statements made, for flush to write before the commit: its history in
// one INSERT per distinct (at, reason), usually one, and its counters in
// one UPDATE, netted per number and state (a batch's claims out of queued
// and acceptances out of sending meet in sending). The zero value is an
// empty log.
type moveLog struct {
	hist  []histGroup               // by (at, reason), in the order first moved
	delta map[string]map[string]int // state -> number -> change of its counter
}

// histGroup is the history of a moveLog's transitions sharing one
// instant and reason: the items' ids by the state entered, in the order
// moved.
type histGroup struct {
	at     int64
	reason string
	states []string
	ids    [][]int64
}

// add records that item id of number sender moved from state from to
// state to, at at for reason.
func (l *moveLog) add(id int64, sender, from, to string, at int64, reason string) {
	if to == from {
		return // not a transition (cannot happen: the statements move)
	}
	var g *histGroup
	for i := range l.hist {
		if l.hist[i].at == at && l.hist[i].reason == reason {
			g = &l.hist[i]
			break
		}
	}
	if g == nil {
		l.hist = append(l.hist, histGroup{at: at, reason: reason})
		g = &l.hist[len(l.hist)-1]
	}
	i := slices.Index(g.states, to)
	if i < 0 {
		g.states, g.ids = append(g.states, to), append(g.ids, nil)
		i = len(g.states) - 1
	}
	g.ids[i] = append(g.ids[i], id)
	l.count(from, sender, -1)
	l.count(to, sender, 1)
}

// count adds d to the change of sender's counter of state st.
func (l *moveLog) count(st, sender string, d int) {
	if l.delta == nil {
		l.delta = map[string]map[string]int{}
	}
	by := l.delta[st]
	if by == nil {
		by = map[string]int{}
		l.delta[st] = by
	}
	by[sender] += d
}

// The statements of flush: json_each reads an object (state -> list of
// items, or state -> object of number -> change), and a second json_each
// each of its values; no SQL function is called (see orFail).
const (
	sqlMoveHistory = `INSERT OR FAIL INTO outbox_history (item, at, state, reason)
		SELECT j.value, ?, s.key, ? FROM json_each(?) AS s, json_each(s.value) AS j`
	sqlMoveCount = `UPDATE OR FAIL outbox_counts SET n = n + j.value FROM json_each(?) AS s, json_each(s.value) AS j
		WHERE outbox_counts.state = s.key AND outbox_counts.sender = j.key`
	sqlMoveCreate = `INSERT OR FAIL INTO outbox_counts (sender, state, n) SELECT j.key, s.key, j.value
		FROM json_each(?) AS s, json_each(s.value) AS j
		WHERE NOT EXISTS (SELECT 1 FROM outbox_counts c WHERE c.sender = j.key AND c.state = s.key)`
)

// moveSQL are flush's statements, prepared with the hot ones.
var moveSQL = []string{sqlMoveHistory, sqlMoveCount, sqlMoveCreate}

// flush writes what the trigger would have written for l's transitions,
// in tx: their history rows and their counters. It empties l.
func (l *moveLog) flush(ctx context.Context, o *Outbox, tx *sql.Tx) error {
	defer func() { *l = moveLog{} }()
	var b []byte
	for _, g := range l.hist {
		b = append(b[:0], '{')
		for i, st := range g.states {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, st) // a state's name: letters and _
			b = append(b, ':', '[')
			for k, id := range g.ids[i] {
				if k > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, id, 10)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
		if _, err := o.exec(ctx, tx, sqlMoveHistory, g.at, g.reason, string(b)); err != nil {
			return fmt.Errorf("recording history: %w", err)
		}
	}
	counters := 0
	for st, by := range l.delta {
		for sender, d := range by {
			if d == 0 {
				delete(by, sender) // claimed and accepted in one transaction
			}
		}
		if len(by) == 0 {
			delete(l.delta, st)
		}
		counters += len(by)
	}
	if counters == 0 {
		return nil
	}
	delta, _ := json.Marshal(l.delta) // strings and integers: cannot fail
	res, err := o.exec(ctx, tx, sqlMoveCount, string(delta))
	if err != nil {
		return fmt.Errorf("counting: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || int(n) < counters {
		// A counter not created yet (the first item of a number in this
		// state).
		if _, err := o.exec(ctx, tx, sqlMoveCreate, string(delta)); err != nil {
			return fmt.Errorf("counting: %w", err)
		}
	}
	return nil
}
