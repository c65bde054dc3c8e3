package outbox

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
