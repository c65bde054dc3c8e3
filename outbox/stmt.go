package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
)

// Statements are written for SQLite, with ? placeholders, and rewritten
// for Postgres by q. With SQLite, the statements are prepared once per
// Outbox and kept (stmtCache): modernc.org/sqlite (since v1.41.0) keeps a
// prepared statement's handle across executions, where a statement run
// by its text is parsed and planned again every time. pgx keeps a cache
// per connection by text of its own.

// stmtCache holds an Outbox's prepared statements (SQLite). They are
// prepared by Open, before anything else uses the connection (preparing
// one later could wait for the connection a transaction of the caller's
// holds), and read without a lock afterwards.
type stmtCache struct {
	stmts map[string]*sql.Stmt
}

// prepare prepares queries on db. A statement that fails to prepare is
// left out: it runs by its text, which reports its error.
func (c *stmtCache) prepare(ctx context.Context, db *sql.DB, queries []string) {
	c.stmts = make(map[string]*sql.Stmt, len(queries))
	for _, q := range queries {
		if _, ok := c.stmts[q]; ok {
			continue
		}
		if st, err := db.PrepareContext(ctx, q); err == nil {
			c.stmts[q] = st
		}
	}
}

// close closes the statements.
func (c *stmtCache) close() {
	for _, st := range c.stmts {
		st.Close()
	}
}

// hotSQL are the statements prepared once (SQLite): those run for every
// message or batch.
func hotSQL(d dialect) []string {
	qs := []string{pickSQL(d), claimSQL(d), acceptSQL(d), sqlSetState, sqlLateAccept, sqlDrop, sqlRequeue, sqlHold,
		sqlNextWake, sqlRenew, sqlSweepUnwritten, sqlSweepDead, sqlSweepLate, sqlSweepResend, burstSQL(d), sqlWindow,
		sqlPickLanes, sqlNextSender,
		d.countsSQL(), sqlCountInserted, sqlLookupKey, sqlLaneDepth, sqlNewLanes, sqlLookupKeys, sqlLaneDepths, sqlGetItem, sqlGetHistory}
	qs = append(qs, moveSQL...)
	for _, n := range sqliteInserts {
		qs = append(qs, insertSQL(n))
	}
	return qs
}

// prepared returns query's kept statement for ex (a *sql.DB or a
// *sql.Tx of o's database), or nil to run it by its text.
func (o *Outbox) prepared(ctx context.Context, ex execer, query string) *sql.Stmt {
	st := o.stmts.stmts[query]
	if st == nil {
		return nil
	}
	switch ex := ex.(type) {
	case *sql.DB:
		if ex == o.db {
			return st
		}
	case *sql.Tx:
		// (The transaction's connection reuses the statement prepared on
		// it: with SQLite's one connection, prepared once.)
		return ex.StmtContext(ctx, st)
	}
	return nil
}

// orFail is the conflict clause of the statements that write in a
// transaction of several statements (UPDATE OR FAIL, INSERT OR FAIL
// INTO). SQLite gives a statement that writes several rows (or fires a
// trigger) and may abort halfway (the default ABORT on a NOT NULL
// column it sets, a function call) a statement journal: the prior
// content of every page it changes, to undo the statement alone. With
// modernc.org/sqlite that journal, allocated in 1 KiB chunks and freed
// at the statement's end, maps and unmaps memory for every statement: a
// third of a campaign's CPU went there. FAIL stops at a violation
// keeping the rows written before it, which needs no journal; none of
// these statements can violate a constraint, and an error rolls their
// whole transaction back anyway. (Such statements also call no SQL
// function: see acceptSQL.) q drops it for Postgres.
const orFail = " OR FAIL"

// exec runs query on ex.
func (o *Outbox) exec(ctx context.Context, ex execer, query string, args ...any) (sql.Result, error) {
	if st := o.prepared(ctx, ex, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return ex.ExecContext(ctx, o.q(query), args...)
}

// query is exec for a query returning rows.
func (o *Outbox) query(ctx context.Context, ex execer, query string, args ...any) (*sql.Rows, error) {
	if st := o.prepared(ctx, ex, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return ex.QueryContext(ctx, o.q(query), args...)
}

// queryRow is exec for a query returning one row.
func (o *Outbox) queryRow(ctx context.Context, ex execer, query string, args ...any) *sql.Row {
	if st := o.prepared(ctx, ex, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return ex.QueryRowContext(ctx, o.q(query), args...)
}

// inList is the SQL of "is one of the list passed as one argument" for
// the dialect: a JSON array read by json_each with SQLite, an array with
// Postgres (typ is its element type: text or bigint). Build the argument
// with listArg.
func (d dialect) inList(typ string) string {
	if d.postgres {
		return "= ANY(?::" + typ + "[])"
	}
	return "IN (SELECT value FROM json_each(?))"
}

// listArg is the argument matching inList.
func listArg[T string | int64](d dialect, vs []T) any {
	if d.postgres {
		return vs
	}
	b, _ := json.Marshal(vs) // strings and integers: cannot fail
	return string(b)
}
