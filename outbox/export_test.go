package outbox

import (
	"context"
	"database/sql"
	"strconv"
)

// SQLiteSource is the driver DSN Open uses for the SQLite file at path
// (the same pragmas), for the floor benchmarks.
func SQLiteSource(path string) string {
	p, err := parseDSN("sqlite:" + path)
	if err != nil {
		panic(err)
	}
	return p.source
}

// SchemaPostgres1 is the Postgres schema of version 1 (before versions
// were recorded), for the upgrade test.
const SchemaPostgres1 = schemaPostgres1

// CreateSchema creates the schema of version v (1 to SchemaVersion) in
// db, as that version's code left it, for the upgrade tests.
func CreateSchema(ctx context.Context, db *sql.DB, postgres bool, v int) error {
	ddl := schemaSQLite1
	if postgres {
		ddl = schemaPostgres1
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return err
	}
	for i := 1; i < v; i++ {
		m := migrations[i-1].sqlite
		if postgres {
			m = migrations[i-1].postgres
		}
		if _, err := db.ExecContext(ctx, m); err != nil {
			return err
		}
	}
	if v > 1 {
		_, err := db.ExecContext(ctx, `INSERT INTO outbox_schema (version) VALUES (`+strconv.Itoa(v)+`)`)
		return err
	}
	return nil
}

// Peers returns, for each Run of o, how many workers it counts sending
// on its outbox, itself included (peers.go: 0 before its first count,
// and always on SQLite).
func Peers(o *Outbox) []int {
	o.runMu.Lock()
	defer o.runMu.Unlock()
	var n []int
	for r := range o.runners {
		n = append(n, int(r.peers.n.Load()))
	}
	return n
}
