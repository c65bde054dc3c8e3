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
