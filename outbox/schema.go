package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// SchemaVersion is the version of the database schema this code writes.
// Open migrates an older outbox forward (in one transaction, keeping every
// item) and refuses a newer one with an error matching ErrSchemaTooNew.
//
// Version 1 is the schema of the releases before versions were recorded
// (an outbox without the outbox_schema table). Version 2 adds the
// counters Snapshot and Enqueue read instead of counting rows, and the
// burst column of EnqueueBurst. Version 3 adds the trace context an
// Enqueue stores for WithTracer. Version 4 (SQLite) counts transitions
// without an upsert (see migrateSQLite3to4). Version 5 adds the write
// marks of Run's claims (unwritten_at, WithWriteMarks). Version 6 moves the
// history and counters of the hot transitions out of the per-row triggers
// (transitions.go). Version 7 (SQLite) numbers the lanes in the order
// they first appear (outbox_lanes) and indexes the live items by number
// and lane number, so that a list enqueued in any order grows that index
// at its end (see migrateSQLite6to7).
const SchemaVersion = 7

// migration moves a schema from version to version+1.
type migration struct {
	sqlite, postgres string
}

// migrations[v-1] moves version v to v+1.
var migrations = []migration{
	{sqlite: migrateSQLite1to2, postgres: migratePostgres1to2},
	{sqlite: migrate2to3, postgres: migrate2to3},
	{sqlite: migrateSQLite3to4, postgres: `SELECT 1`},
	{sqlite: migrateUnwritten, postgres: migrateUnwritten}, // mark.go
	{sqlite: migrateSQLite5to6, postgres: migratePostgres5to6},
	{sqlite: migrateSQLite6to7, postgres: `SELECT 1`},
}

// migrateSQLite6to7 numbers the lanes (outbox_lanes: a lane's number is
// given at its first enqueue and kept, so numbers follow the order in
// which lanes first appeared) and indexes the live items by (sender,
// lane_no, seq) instead of (lane, seq).
//
// Why: SQLite writes a whole page of an index for every entry it adds,
// rewrites or drops, and the live index's entry of an item is added at its
// enqueue, rewritten at its claim (the index's condition reads state) and
// dropped at its outcome. Keyed by the lane's name, a list enqueued in a
// CRM's order (random recipients) put each of those three writes on a
// random page of an index of a million lanes; keyed by the lane's number,
// they fall at the index's end, as the items' own rows do, whatever the
// list's order: one random write per new lane is left (outbox_lanes' own
// index of names), and none for a lane seen before. The sender leads the
// key so that Run can walk one number's lanes (share.go).
//
// Existing lanes are numbered in the order of their oldest item. Postgres
// keeps its layout (its version is 7 with nothing changed). A worker of
// version 6 still running on the file afterwards (SQLite allows several
// processes) inserts items with lane_no 0: each of its numbers' items
// then share one lane, sent one at a time in order, nothing lost or sent
// twice; open such files with one version at a time.
const migrateSQLite6to7 = `
CREATE TABLE outbox_lanes (
	id   INTEGER PRIMARY KEY,
	lane TEXT NOT NULL UNIQUE
);
INSERT INTO outbox_lanes (lane) SELECT lane FROM outbox_items GROUP BY lane ORDER BY MIN(id);
ALTER TABLE outbox_items ADD COLUMN lane_no INTEGER NOT NULL DEFAULT 0;
UPDATE outbox_items SET lane_no = (SELECT l.id FROM outbox_lanes l WHERE l.lane = outbox_items.lane);
DROP INDEX IF EXISTS outbox_items_live;
CREATE INDEX outbox_items_live ON outbox_items (sender, lane_no, seq) WHERE state IN ('queued', 'sending');
`

// migrateSQLite5to6 adds moves, the count of an item's transitions
// recorded by the statement that made them (transitions.go), and has the
// trigger skip those: it records the others (the rare paths, a caller's
// own UPDATE) as before.
const migrateSQLite5to6 = `
ALTER TABLE outbox_items ADD COLUMN moves INTEGER NOT NULL DEFAULT 0;
DROP TRIGGER IF EXISTS outbox_items_changed;
CREATE TRIGGER outbox_items_changed AFTER UPDATE OF state ON outbox_items
	WHEN new.state <> old.state AND new.moves = old.moves BEGIN
	INSERT INTO outbox_history (item, at, state, reason) VALUES (new.id, new.state_at, new.state, new.reason);
	UPDATE outbox_counts SET n = n - 1 WHERE sender = old.sender AND state = old.state;
	INSERT INTO outbox_counts (sender, state, n) SELECT new.sender, new.state, 0
		WHERE NOT EXISTS (SELECT 1 FROM outbox_counts WHERE sender = new.sender AND state = new.state);
	UPDATE outbox_counts SET n = n + 1 WHERE sender = new.sender AND state = new.state;
END;
`

// migratePostgres5to6 adds moves too, and has the trigger skip the
// changes of state that set it (transitions.go): the INSERT and DELETE
// trigger and the function are those of version 2. The DDL locks
// outbox_items: it waits for the transactions of running workers. A
// worker of version 5 still running afterwards leaves moves alone: its
// changes of state are recorded by the trigger, as before.
const migratePostgres5to6 = `
ALTER TABLE outbox_items ADD COLUMN moves BIGINT NOT NULL DEFAULT 0;
DROP TRIGGER IF EXISTS outbox_items_transition ON outbox_items;
CREATE TRIGGER outbox_items_transition AFTER INSERT OR DELETE ON outbox_items
	FOR EACH ROW EXECUTE FUNCTION outbox_record_transition();
CREATE TRIGGER outbox_items_changed AFTER UPDATE OF state ON outbox_items
	FOR EACH ROW WHEN (NEW.moves = OLD.moves) EXECUTE FUNCTION outbox_record_transition();
`

// migrateSQLite3to4 rewrites the trigger counting transitions without an
// upsert: an upsert's DO UPDATE is coded to abort on a violation whatever
// the statement's conflict clause, so every multi-row change of state
// (a batch's claim, its acceptances) needed a statement journal (see
// orFail). The counter of the new state is created if missing, then
// incremented. Counters stay correct; nothing else changes.
const migrateSQLite3to4 = `
DROP TRIGGER IF EXISTS outbox_items_changed;
CREATE TRIGGER outbox_items_changed AFTER UPDATE OF state ON outbox_items WHEN new.state <> old.state BEGIN
	INSERT INTO outbox_history (item, at, state, reason) VALUES (new.id, new.state_at, new.state, new.reason);
	UPDATE outbox_counts SET n = n - 1 WHERE sender = old.sender AND state = old.state;
	INSERT INTO outbox_counts (sender, state, n) SELECT new.sender, new.state, 0
		WHERE NOT EXISTS (SELECT 1 FROM outbox_counts WHERE sender = new.sender AND state = new.state);
	UPDATE outbox_counts SET n = n + 1 WHERE sender = new.sender AND state = new.state;
END;
`

// migrate2to3 adds the trace context stored with an item (WithTracer).
const migrate2to3 = `ALTER TABLE outbox_items ADD COLUMN trace TEXT NOT NULL DEFAULT '';`

func init() {
	if len(migrations) != SchemaVersion-1 {
		panic("outbox: a migration is missing")
	}
}

// migrate creates the tables (a new database gets version 1, then every
// migration, so that the path an upgrade takes is the one every test
// takes), or migrates an existing outbox forward, in one transaction.
func (o *Outbox) migrate(ctx context.Context) error {
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if o.d.postgres {
		// Several workers may start at once: serialise the DDL. (SQLite's
		// transactions begin IMMEDIATE: the write lock is held already.)
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7277172910)`); err != nil {
			return err
		}
	}
	v, err := o.schemaVersion(ctx, tx)
	if err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w: the database has schema version %d, this code knows up to %d (open it with a newer wapace)",
			ErrSchemaTooNew, v, SchemaVersion)
	}
	if v == SchemaVersion {
		return tx.Commit()
	}
	if v == 0 {
		ddl := schemaSQLite1
		if o.d.postgres {
			ddl = schemaPostgres1
		}
		if _, err := tx.ExecContext(ctx, ddl); err != nil {
			return err
		}
		v = 1
	}
	for ; v < SchemaVersion; v++ {
		m := migrations[v-1]
		ddl := m.sqlite
		if o.d.postgres {
			ddl = m.postgres
		}
		if _, err := tx.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("migrating the schema from version %d to %d: %w", v, v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM outbox_schema`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, o.q(`INSERT INTO outbox_schema (version) VALUES (?)`), SchemaVersion); err != nil {
		return err
	}
	return tx.Commit()
}

// schemaVersion reads the version of the outbox in tx's database: 0 for
// none (no outbox_items table), 1 for an outbox written before versions
// were recorded.
func (o *Outbox) schemaVersion(ctx context.Context, tx *sql.Tx) (int, error) {
	var items, versions bool
	if o.d.postgres {
		if err := tx.QueryRowContext(ctx, `SELECT to_regclass('outbox_items') IS NOT NULL, to_regclass('outbox_schema') IS NOT NULL`).Scan(&items, &versions); err != nil {
			return 0, err
		}
	} else {
		if err := tx.QueryRowContext(ctx, `SELECT
			EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'outbox_items'),
			EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'outbox_schema')`).Scan(&items, &versions); err != nil {
			return 0, err
		}
	}
	switch {
	case versions:
		var v int
		err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM outbox_schema`).Scan(&v)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, err
		}
		return max(v, 1), nil
	case items:
		return 1, nil
	}
	return 0, nil
}

// The schema of version 1, unchanged: a new database starts from it.
const schemaSQLite1 = `
CREATE TABLE IF NOT EXISTS outbox_items (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	ikey        TEXT NOT NULL UNIQUE,
	seq         INTEGER NOT NULL,
	lane        TEXT NOT NULL,
	sender      TEXT NOT NULL,
	recipient   TEXT NOT NULL,
	kind        TEXT NOT NULL,
	message     TEXT NOT NULL,
	state       TEXT NOT NULL,
	enqueued_at INTEGER NOT NULL,
	due_at      INTEGER NOT NULL,
	expires_at  INTEGER NOT NULL,
	state_at    INTEGER NOT NULL,
	attempts    INTEGER NOT NULL DEFAULT 0,
	resends     INTEGER NOT NULL DEFAULT 0,
	owner       TEXT NOT NULL DEFAULT '',
	lease_until INTEGER NOT NULL DEFAULT 0,
	sent_at     INTEGER NOT NULL DEFAULT 0,
	wamid       TEXT NOT NULL DEFAULT '',
	code        INTEGER NOT NULL DEFAULT 0,
	reason      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS outbox_items_live ON outbox_items (lane, seq) WHERE state IN ('queued', 'sending');
CREATE INDEX IF NOT EXISTS outbox_items_queued ON outbox_items (due_at, seq) WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS outbox_items_expiry ON outbox_items (expires_at) WHERE state = 'queued' AND expires_at > 0;
CREATE INDEX IF NOT EXISTS outbox_items_sent ON outbox_items (lane, sent_at) WHERE sent_at > 0;
CREATE INDEX IF NOT EXISTS outbox_items_wamid ON outbox_items (wamid) WHERE wamid <> '';
CREATE INDEX IF NOT EXISTS outbox_items_unknown ON outbox_items (state_at) WHERE state = 'submitted_unknown';
CREATE INDEX IF NOT EXISTS outbox_items_sending ON outbox_items (lease_until) WHERE state = 'sending';
CREATE TABLE IF NOT EXISTS outbox_transitions (
	id     INTEGER PRIMARY KEY AUTOINCREMENT,
	ikey   TEXT NOT NULL,
	at     INTEGER NOT NULL,
	state  TEXT NOT NULL,
	reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS outbox_transitions_key ON outbox_transitions (ikey);
CREATE TABLE IF NOT EXISTS outbox_windows (
	sender       TEXT NOT NULL,
	recipient    TEXT NOT NULL,
	last_inbound INTEGER NOT NULL,
	PRIMARY KEY (sender, recipient)
);
CREATE TRIGGER IF NOT EXISTS outbox_items_inserted AFTER INSERT ON outbox_items BEGIN
	INSERT INTO outbox_transitions (ikey, at, state, reason) VALUES (new.ikey, new.state_at, new.state, new.reason);
END;
CREATE TRIGGER IF NOT EXISTS outbox_items_changed AFTER UPDATE OF state ON outbox_items WHEN new.state <> old.state BEGIN
	INSERT INTO outbox_transitions (ikey, at, state, reason) VALUES (new.ikey, new.state_at, new.state, new.reason);
END;
`

const schemaPostgres1 = `
CREATE TABLE IF NOT EXISTS outbox_items (
	id          BIGSERIAL PRIMARY KEY,
	ikey        TEXT NOT NULL UNIQUE,
	seq         BIGINT NOT NULL,
	lane        TEXT NOT NULL,
	sender      TEXT NOT NULL,
	recipient   TEXT NOT NULL,
	kind        TEXT NOT NULL,
	message     TEXT NOT NULL,
	state       TEXT NOT NULL,
	enqueued_at BIGINT NOT NULL,
	due_at      BIGINT NOT NULL,
	expires_at  BIGINT NOT NULL,
	state_at    BIGINT NOT NULL,
	attempts    INTEGER NOT NULL DEFAULT 0,
	resends     INTEGER NOT NULL DEFAULT 0,
	owner       TEXT NOT NULL DEFAULT '',
	lease_until BIGINT NOT NULL DEFAULT 0,
	sent_at     BIGINT NOT NULL DEFAULT 0,
	wamid       TEXT NOT NULL DEFAULT '',
	code        INTEGER NOT NULL DEFAULT 0,
	reason      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS outbox_items_live ON outbox_items (lane, seq) WHERE state IN ('queued', 'sending');
CREATE INDEX IF NOT EXISTS outbox_items_queued ON outbox_items (due_at, seq) WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS outbox_items_expiry ON outbox_items (expires_at) WHERE state = 'queued' AND expires_at > 0;
CREATE INDEX IF NOT EXISTS outbox_items_sent ON outbox_items (lane, sent_at) WHERE sent_at > 0;
CREATE INDEX IF NOT EXISTS outbox_items_wamid ON outbox_items (wamid) WHERE wamid <> '';
CREATE INDEX IF NOT EXISTS outbox_items_unknown ON outbox_items (state_at) WHERE state = 'submitted_unknown';
CREATE INDEX IF NOT EXISTS outbox_items_sending ON outbox_items (lease_until) WHERE state = 'sending';
CREATE TABLE IF NOT EXISTS outbox_transitions (
	id     BIGSERIAL PRIMARY KEY,
	ikey   TEXT NOT NULL,
	at     BIGINT NOT NULL,
	state  TEXT NOT NULL,
	reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS outbox_transitions_key ON outbox_transitions (ikey);
CREATE TABLE IF NOT EXISTS outbox_windows (
	sender       TEXT NOT NULL,
	recipient    TEXT NOT NULL,
	last_inbound BIGINT NOT NULL,
	PRIMARY KEY (sender, recipient)
);
CREATE OR REPLACE FUNCTION outbox_record_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' OR NEW.state <> OLD.state THEN
		INSERT INTO outbox_transitions (ikey, at, state, reason) VALUES (NEW.ikey, NEW.state_at, NEW.state, NEW.reason);
	END IF;
	IF TG_OP = 'INSERT' OR (OLD.state = 'sending' AND NEW.state <> 'sending') OR NEW.state = 'queued' THEN
		PERFORM pg_notify('wapace_outbox', '');
	END IF;
	RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER outbox_items_transition AFTER INSERT OR UPDATE OF state ON outbox_items
	FOR EACH ROW EXECUTE FUNCTION outbox_record_transition();
`

// Version 2: items counted per (sender, state), so that Snapshot, Drain
// and Enqueue's capacity read a few counters instead of counting rows (the
// triggers count every change of state, whoever makes it; on SQLite,
// Enqueue, the only writer of new rows, counts its inserts once per
// statement); the
// first transition of every item (queued, at its enqueue) is not a row of
// the history but read from the item; bursts (items sent together, EnqueueBurst); the history
// of transitions keyed by the item's id (an index of integers that grows
// at its end, where outbox_transitions had one of random keys: a page
// read and written at a random place per transition); fixed worker IDs
// held with a heartbeat (outbox_workers, see worker.go); the template
// category registry (outbox_template_categories); and, on SQLite,
// no index of sends per lane (only Postgres's claim reads it).
//
// SQLite has one writer: the counters are updated in place.
// Postgres's triggers append deltas instead (no row lock shared by every
// transaction of a number), which Run folds into the counters now and
// then (foldCounts); readers add the two.
const migrateSQLite1to2 = `
CREATE TABLE outbox_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS outbox_template_categories (
	waba_id    TEXT NOT NULL,
	name       TEXT NOT NULL,
	language   TEXT NOT NULL,
	category   TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (waba_id, name, language)
);
CREATE TABLE outbox_workers (
	name        TEXT PRIMARY KEY,
	incarnation TEXT NOT NULL,
	alive_until INTEGER NOT NULL
);
CREATE TABLE outbox_counts (
	sender TEXT NOT NULL,
	state  TEXT NOT NULL,
	n      INTEGER NOT NULL,
	PRIMARY KEY (sender, state)
) WITHOUT ROWID;
INSERT INTO outbox_counts (sender, state, n) SELECT sender, state, COUNT(*) FROM outbox_items GROUP BY sender, state;
ALTER TABLE outbox_items ADD COLUMN burst TEXT NOT NULL DEFAULT '';
CREATE TABLE outbox_history (
	id     INTEGER PRIMARY KEY,
	item   INTEGER NOT NULL,
	at     INTEGER NOT NULL,
	state  TEXT NOT NULL,
	reason TEXT NOT NULL DEFAULT ''
);
INSERT INTO outbox_history (id, item, at, state, reason)
	SELECT t.id, i.id, t.at, t.state, t.reason FROM outbox_transitions t JOIN outbox_items i ON i.ikey = t.ikey ORDER BY t.id;
DELETE FROM outbox_history WHERE state = 'queued' AND id IN (SELECT MIN(id) FROM outbox_history GROUP BY item);
CREATE INDEX outbox_history_item ON outbox_history (item);
DROP TRIGGER IF EXISTS outbox_items_inserted;
DROP TRIGGER IF EXISTS outbox_items_changed;
DROP TABLE outbox_transitions;
DROP INDEX IF EXISTS outbox_items_sent;
CREATE TRIGGER outbox_items_changed AFTER UPDATE OF state ON outbox_items WHEN new.state <> old.state BEGIN
	INSERT INTO outbox_history (item, at, state, reason) VALUES (new.id, new.state_at, new.state, new.reason);
	UPDATE outbox_counts SET n = n - 1 WHERE sender = old.sender AND state = old.state;
	INSERT INTO outbox_counts (sender, state, n) VALUES (new.sender, new.state, 1)
		ON CONFLICT (sender, state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER outbox_items_deleted AFTER DELETE ON outbox_items BEGIN
	DELETE FROM outbox_history WHERE item = old.id;
	UPDATE outbox_counts SET n = n - 1 WHERE sender = old.sender AND state = old.state;
END;
`

const migratePostgres1to2 = `
CREATE TABLE outbox_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS outbox_template_categories (
	waba_id    TEXT NOT NULL,
	name       TEXT NOT NULL,
	language   TEXT NOT NULL,
	category   TEXT NOT NULL,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (waba_id, name, language)
);
CREATE TABLE outbox_workers (
	name        TEXT PRIMARY KEY,
	incarnation TEXT NOT NULL,
	alive_until BIGINT NOT NULL
);
CREATE TABLE outbox_counts (
	sender TEXT NOT NULL,
	state  TEXT NOT NULL,
	n      BIGINT NOT NULL,
	PRIMARY KEY (sender, state)
);
CREATE TABLE outbox_count_deltas (
	id     BIGSERIAL PRIMARY KEY,
	sender TEXT NOT NULL,
	state  TEXT NOT NULL,
	d      INTEGER NOT NULL
);
LOCK TABLE outbox_items IN SHARE MODE;
INSERT INTO outbox_counts (sender, state, n) SELECT sender, state, COUNT(*) FROM outbox_items GROUP BY sender, state;
ALTER TABLE outbox_items ADD COLUMN burst TEXT NOT NULL DEFAULT '';
CREATE TABLE outbox_history (
	id     BIGSERIAL PRIMARY KEY,
	item   BIGINT NOT NULL,
	at     BIGINT NOT NULL,
	state  TEXT NOT NULL,
	reason TEXT NOT NULL DEFAULT ''
);
INSERT INTO outbox_history (item, at, state, reason)
	SELECT i.id, t.at, t.state, t.reason FROM outbox_transitions t JOIN outbox_items i ON i.ikey = t.ikey ORDER BY t.id;
DELETE FROM outbox_history WHERE state = 'queued' AND id IN (SELECT MIN(id) FROM outbox_history GROUP BY item);
CREATE INDEX outbox_history_item ON outbox_history (item);
DROP TABLE outbox_transitions;
CREATE OR REPLACE FUNCTION outbox_record_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'DELETE' THEN
		DELETE FROM outbox_history WHERE item = OLD.id;
		INSERT INTO outbox_count_deltas (sender, state, d) VALUES (OLD.sender, OLD.state, -1);
		RETURN NULL;
	END IF;
	IF TG_OP = 'INSERT' THEN
		INSERT INTO outbox_count_deltas (sender, state, d) VALUES (NEW.sender, NEW.state, 1);
	ELSIF NEW.state <> OLD.state THEN
		INSERT INTO outbox_history (item, at, state, reason) VALUES (NEW.id, NEW.state_at, NEW.state, NEW.reason);
		INSERT INTO outbox_count_deltas (sender, state, d) VALUES (NEW.sender, NEW.state, 1), (OLD.sender, OLD.state, -1);
	END IF;
	IF TG_OP = 'INSERT' OR (OLD.state = 'sending' AND NEW.state <> 'sending') OR NEW.state = 'queued' THEN
		PERFORM pg_notify('wapace_outbox', '');
	END IF;
	RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER outbox_items_transition AFTER INSERT OR UPDATE OF state OR DELETE ON outbox_items
	FOR EACH ROW EXECUTE FUNCTION outbox_record_transition();
`

// countsSQL reads the counters: one row per (sender, state).
func (d dialect) countsSQL() string {
	if !d.postgres {
		return `SELECT sender, state, n FROM outbox_counts WHERE n <> 0`
	}
	return `SELECT sender, state, SUM(n) FROM (SELECT sender, state, n FROM outbox_counts
	UNION ALL SELECT sender, state, d FROM outbox_count_deltas) AS c GROUP BY sender, state`
}

// counts reads the counters: the items per state, and the live ones
// (queued or sending) per sender.
func (o *Outbox) counts(ctx context.Context, ex execer) (byState map[State]int, live map[string]int, err error) {
	rows, err := o.query(ctx, ex, o.d.countsSQL())
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	byState, live = map[State]int{}, map[string]int{}
	for rows.Next() {
		var sender, name string
		var n int
		if err := rows.Scan(&sender, &name, &n); err != nil {
			return nil, nil, err
		}
		st, ok := parseState(name)
		if !ok || n == 0 {
			continue
		}
		byState[st] += n
		if st == StateQueued || st == StateSending {
			live[sender] += n
		}
	}
	return byState, live, rows.Err()
}

// countInserted (SQLite) adds n queued items of sender to the counters,
// in tx. (Postgres's trigger counts inserts too: a worker of the version
// before, still running while another migrates, inserts without counting.)
func (o *Outbox) countInserted(ctx context.Context, tx *sql.Tx, sender string, n int) error {
	if o.d.postgres {
		return nil
	}
	_, err := o.exec(ctx, tx, sqlCountInserted, sender, n)
	return err
}

var sqlCountInserted = `INSERT INTO outbox_counts (sender, state, n) VALUES (?, 'queued', ?)
		ON CONFLICT (sender, state) DO UPDATE SET n = outbox_counts.n + excluded.n`

// foldCounts (Postgres) folds the deltas into the counters, if no other
// worker is doing so.
func (o *Outbox) foldCounts(ctx context.Context) error {
	if !o.d.postgres {
		return nil
	}
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var ok bool
	if err := tx.QueryRowContext(ctx, `SELECT pg_try_advisory_xact_lock(7277172911)`).Scan(&ok); err != nil || !ok {
		return err
	}
	if _, err := tx.ExecContext(ctx, `WITH d AS (DELETE FROM outbox_count_deltas RETURNING sender, state, d)
		INSERT INTO outbox_counts (sender, state, n) SELECT sender, state, SUM(d) FROM d GROUP BY sender, state ORDER BY sender, state
		ON CONFLICT (sender, state) DO UPDATE SET n = outbox_counts.n + excluded.n`); err != nil {
		return err
	}
	return tx.Commit()
}
