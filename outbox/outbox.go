package outbox

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"modernc.org/sqlite"             // registers the "sqlite" driver

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/throughput"
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
	ownDB bool // Open opened db: Close closes it
	d     dialect
	cfg   config
	owner string
	// incarnation tells this Outbox's claims from those of an earlier
	// process under the same WithWorkerID.
	incarnation string

	runMu   sync.Mutex // protects runners
	runners map[*runner]bool

	mu     sync.Mutex // protects closed
	closed bool

	group group // concurrent Enqueue calls share transactions

	stmts stmtCache // SQLite: the statements, prepared once

	liveMu sync.Mutex // protects live
	live   liveCount

	waitMu  sync.Mutex                   // protects waiters
	waiters map[*context.CancelFunc]bool // Drain calls waiting for a change

	soloMu    sync.Mutex           // protects soloLanes
	soloLanes map[string]*laneGate // lane -> its Enqueue calls stored alone
	soloSem   chan struct{}        // bounds the connections of calls stored alone

	// client is the Client whose limits Enqueue's estimates use:
	// WithClient's, else the latest Run's, nil before the first Run.
	client atomic.Pointer[cloudapi.Client]

	seedMu sync.Mutex // protects seeded
	// seeded holds what was fed to each pair limiter (the Clients' of this
	// Outbox's Runs).
	seeded map[*pairlimit.Limiter]*seeding

	// ckptSource is the SQLite file's data source when Open opened it:
	// each Run checkpoints it on a connection of its own (checkpoint.go).
	ckptSource string
	ckptBefore func() // tests: runs before each background checkpoint
}

// seeding is what an Outbox fed one pair limiter.
type seeding struct {
	lanes map[string]int64 // lane -> the latest send fed to the limiter
	all   bool             // the recent sends were fed (seedPairs)
}

// seedingOf returns what was fed to pairs. Called with o.seedMu held.
func (o *Outbox) seedingOf(pairs *pairlimit.Limiter) *seeding {
	sd := o.seeded[pairs]
	if sd == nil {
		sd = &seeding{lanes: map[string]int64{}}
		o.seeded[pairs] = sd
	}
	return sd
}

// limits returns the pair policy and the current throughput of business
// number from that Enqueue estimates with: the Outbox's Client's (see
// WithClient), or Meta's defaults before it has one.
func (o *Outbox) limits(from string) (pairlimit.Policy, int) {
	c := o.client.Load()
	if c == nil {
		return pairlimit.Meta, throughput.Default
	}
	return c.PairLimiter().Policy(), c.Number(from).PerSecond()
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
	path   string // the SQLite file
}

func (p dsn) dialect() dialect {
	if p.driver == "pgx" {
		return dialect{name: "postgres", postgres: true}
	}
	return dialect{name: "sqlite"}
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
		// Reads through a memory map of up to 128 MiB, and a page cache
		// of 16 MiB (the default is 2 MiB: a large queue's indexes would
		// be read from the file again and again). Pages read through the
		// map take no room in the cache; what does is every page written,
		// until evicted. A larger cache costs every commit time in
		// proportion to its size: when a transaction's B-tree balancing
		// has moved a page through SQLite's temporary page number (the
		// page of the 1 GiB lock byte), the commit walks the cache's
		// whole hash table to drop pages past the end of the file. With
		// 64 MiB that walk was 9 % of a million-recipient campaign's CPU.
		v.Add("_pragma", "cache_size(-16384)")
		v.Add("_pragma", "mmap_size(134217728)")
		// The log is copied back by Run's checkpointer (checkpoint.go),
		// off the writer's commits; the writer's own checkpoint is the
		// backstop that bounds the log.
		v.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(ckptBackstop)+")")
		v.Set("_txlock", "immediate")
		return dsn{driver: "sqlite", source: "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + v.Encode(), path: path}, nil
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || strings.ContainsRune(s, 0) {
			return dsn{}, fmt.Errorf("%w: postgres DSN must be a postgres://user@host/db URL", ErrInvalidDSN)
		}
		return dsn{driver: "pgx", source: s}, nil
	}
	return dsn{}, fmt.Errorf("%w: want sqlite:PATH or a postgres:// URL", ErrInvalidDSN)
}

// Open opens (creating its tables if needed, migrating them forward from
// an older version) the outbox at dsn: "sqlite:PATH" for an embedded
// SQLite file in WAL mode, or a "postgres://" URL for a server shared by
// several workers. Errors match ErrInvalidDSN, ErrInvalidOption,
// ErrSchemaTooNew, or are the database's (naming the SQLite file and why
// it cannot be opened); they never repeat a password.
//
// A SQLite file's Runs copy its write-ahead log back into the file on a
// second connection of their own, off their commits; the writer's own
// automatic checkpoint waits for 4,000 pages of log, as a bound.
func Open(ctx context.Context, dsnStr string, opts ...Option) (*Outbox, error) {
	p, err := parseDSN(dsnStr)
	if err != nil {
		return nil, err
	}
	if p.path != "" {
		// The driver's words for a file it cannot create are
		// "out of memory (14)": name the file and the cause.
		if err := checkSQLitePath(p.path); err != nil {
			return nil, err
		}
	}
	db, err := sql.Open(p.driver, p.source)
	if err != nil {
		return nil, fmt.Errorf("outbox: open %s: %w", p.dialect().name, scrub(err, dsnStr))
	}
	if !p.dialect().postgres {
		// SQLite has one writer at a time: one connection serialises
		// everything without busy errors.
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(16)
		db.SetMaxIdleConns(16)
	}
	o, err := newOutbox(ctx, db, p.dialect(), true, opts)
	if err == nil && p.path != "" {
		o.ckptSource = p.source
	}
	if err != nil {
		db.Close()
		if p.path != "" && !errors.Is(err, ErrInvalidOption) && !errors.Is(err, ErrSchemaTooNew) {
			return nil, fmt.Errorf("outbox: open sqlite file %q: %w", p.path, err)
		}
		return nil, scrub(err, dsnStr)
	}
	return o, nil
}

// OpenDB is Open on a database the caller owns (its pool size, its
// driver's registration and settings): db must be a "sqlite"
// (modernc.org/sqlite) or "pgx" (github.com/jackc/pgx/v5/stdlib) pool.
// Close leaves db open. For SQLite, give db the pragmas Open sets
// (journal_mode(WAL), synchronous(NORMAL), busy_timeout, foreign_keys(ON),
// temp_store(MEMORY), cache_size(-16384), mmap_size(134217728),
// _txlock=immediate) and one connection
// (db.SetMaxOpenConns(1)): SQLite has one writer, and a second connection
// waits for the first one's locks.
func OpenDB(ctx context.Context, db *sql.DB, opts ...Option) (*Outbox, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil *sql.DB", ErrInvalidDSN)
	}
	var d dialect
	switch db.Driver().(type) {
	case *sqlite.Driver:
		d = dialect{name: "sqlite"}
	case *stdlib.Driver:
		d = dialect{name: "postgres", postgres: true}
	default:
		return nil, fmt.Errorf("%w: the *sql.DB's driver is %T, want modernc.org/sqlite's or pgx's stdlib", ErrInvalidDSN, db.Driver())
	}
	return newOutbox(ctx, db, d, false, opts)
}

// newOutbox configures an Outbox on db and migrates its schema.
func newOutbox(ctx context.Context, db *sql.DB, d dialect, ownDB bool, opts []Option) (*Outbox, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, optErr("nil option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if !cfg.idleWakeSet && d.postgres {
		cfg.idleWake = time.Second
	}
	if cfg.owner == "" {
		cfg.owner = randomKey()
	}
	o := &Outbox{db: db, d: d, cfg: cfg, owner: cfg.owner, incarnation: randomKey()[:12], ownDB: ownDB, runners: map[*runner]bool{}, seeded: map[*pairlimit.Limiter]*seeding{},
		soloLanes: map[string]*laneGate{}, soloSem: make(chan struct{}, max(1, db.Stats().MaxOpenConnections/2))}
	if db.Stats().MaxOpenConnections == 0 {
		o.soloSem = make(chan struct{}, 8)
	}
	if cfg.client != nil {
		o.client.Store(cfg.client)
	}
	if err := o.migrate(ctx); err != nil {
		if errors.Is(err, ErrSchemaTooNew) {
			return nil, err
		}
		return nil, fmt.Errorf("outbox: creating tables: %w", err)
	}
	if !d.postgres {
		o.stmts.prepare(ctx, db, hotSQL(d))
	}
	return o, nil
}

// checkSQLitePath reports, naming the path, why a SQLite file at path
// cannot be opened or created: its directory is missing or not a
// directory, or the file is a directory.
func checkSQLitePath(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("outbox: open sqlite file %q: is a directory", path)
		}
		return nil
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("outbox: open sqlite file %q: its directory: %w", path, err)
	case !fi.IsDir():
		return fmt.Errorf("outbox: open sqlite file %q: %q is not a directory", path, dir)
	}
	return nil
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
	o.stmts.close()
	if !o.ownDB {
		return nil
	}
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

// q rewrites ? placeholders as $1, $2, ... for Postgres, and drops the
// SQLite-only conflict clause orFail.
func (o *Outbox) q(query string) string {
	if !o.d.postgres {
		return query
	}
	query = strings.ReplaceAll(query, orFail, "")
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

// lastKeyTime is the time part of the latest key orderedKey made.
var lastKeyTime atomic.Int64

// orderedKey returns a new idempotency key: 32 hex digits, the first 16
// the wall clock's nanoseconds (increasing strictly within the process,
// even if the clock steps back), the last 16 random, so that keys made
// one after another sort one after another (and land together at the end
// of the key index) and keys of different processes never collide.
func orderedKey() string {
	now := time.Now().UnixNano()
	for {
		last := lastKeyTime.Load()
		t := max(now, last+1)
		if lastKeyTime.CompareAndSwap(last, t) {
			var b [16]byte
			binary.BigEndian.PutUint64(b[:8], uint64(t))
			_, _ = rand.Read(b[8:])
			return hex.EncodeToString(b[:])
		}
	}
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
	if len(evs) > 0 {
		o.wakeWaiters()
	}
	if o.cfg.observer == nil {
		return
	}
	for _, e := range evs {
		o.cfg.observer(e)
	}
}

const itemColumns = `ikey, sender, recipient, kind, state, attempts, resends, enqueued_at, expires_at, state_at, wamid, code, reason`

var (
	sqlGetItem    = `SELECT ` + itemColumns + ` FROM outbox_items WHERE ikey = ?`
	sqlGetHistory = `SELECT at, state, reason FROM outbox_history WHERE item = (SELECT id FROM outbox_items WHERE ikey = ?) ORDER BY id`
)

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
	it, err := scanItem(o.queryRow(ctx, o.db, sqlGetItem, key))
	if errors.Is(err, sql.ErrNoRows) {
		return Item{}, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	if err != nil {
		return Item{}, fmt.Errorf("outbox: get: %w", err)
	}
	rows, err := o.query(ctx, o.db, sqlGetHistory, key)
	if err != nil {
		return Item{}, fmt.Errorf("outbox: get: %w", err)
	}
	defer rows.Close()
	// Every item is stored queued: its first transition is its enqueue.
	it.History = append(it.History, Transition{At: it.EnqueuedAt, State: StateQueued})
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
