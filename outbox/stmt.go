package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
)

// Statements are written for SQLite, with ? placeholders, and rewritten
// for Postgres by q. There is no statement cache of our own:
// modernc.org/sqlite prepares a statement on every execution (a prepared
// *sql.Stmt buys nothing), and pgx keeps a cache per connection by text.
// What keeps parsing cheap is few statements per batch, whose text does
// not depend on the batch's size where that is easy (inList).

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
	return ex.ExecContext(ctx, o.q(query), args...)
}

// query is exec for a query returning rows.
func (o *Outbox) query(ctx context.Context, ex execer, query string, args ...any) (*sql.Rows, error) {
	return ex.QueryContext(ctx, o.q(query), args...)
}

// queryRow is exec for a query returning one row.
func (o *Outbox) queryRow(ctx context.Context, ex execer, query string, args ...any) *sql.Row {
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
