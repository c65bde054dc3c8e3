package outbox

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"             // registers the "sqlite" driver
)

// Outbox is a durable send queue in a database. It is safe for concurrent
// use by multiple goroutines, and several processes may share one Postgres
// database (or, one at a time, one SQLite file). It starts no goroutine:
// dispatching happens inside Run, on the caller's goroutine and the sends
// it starts there. Only Open makes a usable Outbox: the zero Outbox, like
// a nil *Outbox, is closed (its methods return ErrClosed, Wake does
// nothing).
type Outbox struct {
	db    *sql.DB
	d     dialect
	cfg   config
	owner string

	runMu   sync.Mutex // protects runners
	runners map[*runner]bool

	mu     sync.Mutex // protects closed
	closed bool

	group group // concurrent Enqueue calls share transactions

	soloMu    sync.Mutex           // protects soloLanes
	soloLanes map[string]*laneGate // lane -> its Enqueue calls stored alone
	soloSem   chan struct{}        // bounds the connections of calls stored alone

	liveMu sync.Mutex // protects live
	live   liveCount

	seedMu    sync.Mutex       // protects seeded and seededAll
	seeded    map[string]int64 // lane -> latest send fed to the pair limiter by seeding
	seededAll bool             // the recent sends were fed to the pair limiter
}

// dialect holds what differs between SQLite and Postgres.
type dialect struct {
	name     string // "sqlite" or "postgres"
	postgres bool
}

// dsn is a parsed DSN.
type dsn struct {
	driver string // "sqlite" or "pgx"
	source string // the driver's data source name
}

// parseDSN reads "sqlite:PATH" or a postgres:// (postgresql://) URL.
func parseDSN(s string) (dsn, error) {
	switch {
	case strings.HasPrefix(s, "sqlite:"):
		path := strings.TrimPrefix(s, "sqlite:")
		if path == "" || strings.ContainsAny(path, "?#\x00") || strings.HasPrefix(path, ":memory:") || strings.HasPrefix(path, "file:") {
			return dsn{}, fmt.Errorf("%w: sqlite DSN must be sqlite:PATH to a file, without query or memory database", ErrInvalidDSN)
		}
		v := url.Values{}
		v.Add("_pragma", "journal_mode(WAL)")
		v.Add("_pragma", "synchronous(NORMAL)")
		v.Add("_pragma", "busy_timeout(10000)")
		v.Add("_pragma", "foreign_keys(ON)")
		// Statement journals (a statement's undo, in a transaction of
		// several) in memory: on disk they cost a temporary file's writes
		// for every statement touching more than 64 KiB (a shared
		// Enqueue batch, a batch of outcomes).
		v.Add("_pragma", "temp_store(MEMORY)")
		v.Set("_txlock", "immediate")
		return dsn{driver: "sqlite", source: "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + v.Encode()}, nil
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || strings.ContainsRune(s, 0) {
			return dsn{}, fmt.Errorf("%w: postgres DSN must be a postgres://user@host/db URL", ErrInvalidDSN)
		}
		return dsn{driver: "pgx", source: s}, nil
	}
	return dsn{}, fmt.Errorf("%w: want sqlite:PATH or a postgres:// URL", ErrInvalidDSN)
}

// Open opens (creating its tables if needed) the outbox at dsn:
// "sqlite:PATH" for an embedded SQLite file in WAL mode, or a
// "postgres://" URL for a server shared by several workers. Errors match
// ErrInvalidDSN, ErrInvalidOption, or are the database's; they never
// repeat a password.
func Open(ctx context.Context, dsnStr string, opts ...Option) (*Outbox, error) {
	p, err := parseDSN(dsnStr)
	if err != nil {
		return nil, err
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, optErr("nil option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	d := dialect{name: "sqlite"}
	if p.driver == "pgx" {
		d = dialect{name: "postgres", postgres: true}
	}
	if !cfg.idleWakeSet && d.postgres {
		cfg.idleWake = time.Second
	}
	if cfg.owner == "" {
		cfg.owner = randomKey()
	}
	db, err := sql.Open(p.driver, p.source)
	if err != nil {
		return nil, fmt.Errorf("outbox: open %s: %w", d.name, scrub(err, dsnStr))
	}
	if !d.postgres {
		// SQLite has one writer at a time: one connection serialises
		// everything without busy errors.
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(16)
		db.SetMaxIdleConns(16)
	}
	o := &Outbox{db: db, d: d, cfg: cfg, owner: cfg.owner, runners: map[*runner]bool{}, seeded: map[string]int64{},
		soloLanes: map[string]*laneGate{}, soloSem: make(chan struct{}, max(1, db.Stats().MaxOpenConnections/2))}
	if err := o.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("outbox: creating tables: %w", scrub(err, dsnStr))
	}
	return o, nil
}

// scrub removes the DSN's passwords, in every form (see dsnSecrets), from
// a driver error.
func scrub(err error, dsnStr string) error { return scrubDSN(err, dsnStr) }

// Close closes the database. Run must have returned first.
func (o *Outbox) Close() error {
	if o == nil || o.db == nil {
		return nil
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	o.mu.Unlock()
	return o.db.Close()
}

func (o *Outbox) addRunner(r *runner) {
	o.runMu.Lock()
	defer o.runMu.Unlock()
	o.runners[r] = true
}

func (o *Outbox) removeRunner(r *runner) {
	o.runMu.Lock()
	defer o.runMu.Unlock()
	delete(o.runners, r)
}

// DB returns the Outbox's database, so that a caller can begin the
// transaction EnqueueTx takes (and keep its own tables beside the outbox).
// With SQLite it has one connection: do not use o's other methods while
// holding a transaction on it.
func (o *Outbox) DB() *sql.DB { return o.db }

func (o *Outbox) isClosed() bool {
	if o == nil || o.db == nil {
		return true // the zero Outbox: not opened
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

const schemaSQLite = `
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
CREATE TABLE IF NOT EXISTS outbox_template_categories (
	waba_id    TEXT NOT NULL,
	name       TEXT NOT NULL,
	language   TEXT NOT NULL,
	category   TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (waba_id, name, language)
);
CREATE TRIGGER IF NOT EXISTS outbox_items_inserted AFTER INSERT ON outbox_items BEGIN
	INSERT INTO outbox_transitions (ikey, at, state, reason) VALUES (new.ikey, new.state_at, new.state, new.reason);
END;
CREATE TRIGGER IF NOT EXISTS outbox_items_changed AFTER UPDATE OF state ON outbox_items WHEN new.state <> old.state BEGIN
	INSERT INTO outbox_transitions (ikey, at, state, reason) VALUES (new.ikey, new.state_at, new.state, new.reason);
END;
`

const schemaPostgres = `
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
CREATE TABLE IF NOT EXISTS outbox_template_categories (
	waba_id    TEXT NOT NULL,
	name       TEXT NOT NULL,
	language   TEXT NOT NULL,
	category   TEXT NOT NULL,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (waba_id, name, language)
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

func (o *Outbox) migrate(ctx context.Context) error {
	if o.d.postgres {
		// Several workers may start at once: serialise the DDL.
		tx, err := o.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7277172910)`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, schemaPostgres); err != nil {
			return err
		}
		if err := o.migrateTrace(ctx, tx); err != nil {
			return err
		}
		return tx.Commit()
	}
	if _, err := o.db.ExecContext(ctx, schemaSQLite); err != nil {
		return err
	}
	return o.migrateTrace(ctx, o.db)
}

// q rewrites ? placeholders as $1, $2, ... for Postgres.
func (o *Outbox) q(query string) string {
	if !o.d.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func randomKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// execer is what both *sql.DB and *sql.Tx offer.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// events describes transitions for the observer. The transitions
// themselves are recorded by the database's triggers, in the same
// statement as the change of state.
func events(at time.Time, st State, reason string, keys ...string) []Event {
	evs := make([]Event, len(keys))
	for i, k := range keys {
		evs[i] = Event{At: at, Key: k, State: st, Reason: reason}
	}
	return evs
}

func (o *Outbox) notify(evs []Event) {
	if o.cfg.observer == nil {
		return
	}
	for _, e := range evs {
		o.cfg.observer(e)
	}
}

const itemColumns = `ikey, sender, recipient, kind, state, attempts, resends, enqueued_at, expires_at, state_at, wamid, code, reason`

func scanItem(sc interface{ Scan(...any) error }) (Item, error) {
	var it Item
	var st string
	var enq, exp, at int64
	if err := sc.Scan(&it.Key, &it.From, &it.To, &it.Kind, &st, &it.Attempts, &it.Resends, &enq, &exp, &at, &it.MessageID, &it.Code, &it.Reason); err != nil {
		return it, err
	}
	it.State, _ = parseState(st)
	it.EnqueuedAt, it.ExpiresAt, it.UpdatedAt = fromNanos(enq), fromNanos(exp), fromNanos(at)
	return it, nil
}

// Get returns the item with idempotency key key and its history, or an
// error matching ErrNotFound. It changes nothing.
func (o *Outbox) Get(ctx context.Context, key string) (Item, error) {
	if o.isClosed() {
		return Item{}, ErrClosed
	}
	it, err := scanItem(o.db.QueryRowContext(ctx, o.q(`SELECT `+itemColumns+` FROM outbox_items WHERE ikey = ?`), key))
	if errors.Is(err, sql.ErrNoRows) {
		return Item{}, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	if err != nil {
		return Item{}, fmt.Errorf("outbox: get: %w", err)
	}
	rows, err := o.db.QueryContext(ctx, o.q(`SELECT at, state, reason FROM outbox_transitions WHERE ikey = ? ORDER BY id`), key)
	if err != nil {
		return Item{}, fmt.Errorf("outbox: get: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var at int64
		var st, reason string
		if err := rows.Scan(&at, &st, &reason); err != nil {
			return Item{}, fmt.Errorf("outbox: get: %w", err)
		}
		s, _ := parseState(st)
		it.History = append(it.History, Transition{At: fromNanos(at), State: s, Reason: reason})
	}
	return it, rows.Err()
}
