package outbox

import (
	"database/sql"
	"sync"
	"sync/atomic"
)

// Checkpoints off Run's path (SQLite files that Open opened).
//
// In WAL mode SQLite copies its log back into the database file once the
// log holds wal_autocheckpoint pages (1,000 by default), in the commit
// that crossed the mark, on the committing connection: with
// synchronous(NORMAL) that checkpoint syncs the log and then the file.
// The outbox has one connection, so that commit was one of Run's: about
// every 1,000 messages, two syncs of about 7 ms each on this project's
// machine, while the sends waited for Run's next claims.
//
// So each Run of an Outbox that Open opened on a SQLite file starts a
// checkpointer: a goroutine with a connection of its own, which Run wakes
// once it has moved ckptRows items since the last wake-up (a claim and a
// record each move an item: about the 1,000 pages of the default), and
// which then runs wal_checkpoint(PASSIVE): it copies what the log holds
// without waiting for the writer or holding it up, and never blocks a
// commit. Run stops it (and closes its connection) when it returns,
// before Close. The writer's own automatic checkpoint stays, at
// ckptBackstop pages: if the checkpointer falls behind (or nothing runs
// it: only Enqueue writes, or a checkpoint keeps meeting newer commits),
// the log still stops growing there, as it did at 1,000 pages.
const (
	ckptRows     = 2000
	ckptBackstop = 4000
)

// checkpointer copies the log of a SQLite file back into the file, on a
// connection of its own (see above). A nil *checkpointer does nothing.
type checkpointer struct {
	db   *sql.DB
	poke chan struct{} // a checkpoint is wanted (buffered 1: wake-ups coalesce)
	stop chan struct{} // closed by close
	done sync.WaitGroup
	rows atomic.Int64 // items moved since the last wake-up
	runs atomic.Int64 // checkpoints run (tests)
	errs atomic.Int64 // checkpoints that failed (the backstop covers them)
	// before, when set (tests), runs before each checkpoint.
	before func()
}

// startCheckpointer opens a second connection to o's SQLite file and
// starts its checkpointer, or returns nil: Postgres, a database OpenDB
// was given (whose file the Outbox does not know), or a connection that
// cannot be opened (the writer's own checkpoints then carry on alone).
func (o *Outbox) startCheckpointer() *checkpointer {
	if o.d.postgres || o.ckptSource == "" {
		return nil
	}
	db, err := sql.Open("sqlite", o.ckptSource)
	if err != nil {
		return nil
	}
	db.SetMaxOpenConns(1)
	ck := &checkpointer{db: db, poke: make(chan struct{}, 1), stop: make(chan struct{}), before: o.ckptBefore}
	ck.done.Add(1)
	go ck.loop()
	return ck
}

func (ck *checkpointer) loop() {
	defer ck.done.Done()
	for {
		select {
		case <-ck.stop:
			return
		case <-ck.poke:
		}
		if ck.before != nil {
			ck.before()
		}
		// PASSIVE: copies the frames no reader still needs, waits for
		// no one; what it cannot copy now, the next one will.
		if _, err := ck.db.Exec("PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
			ck.errs.Add(1)
		}
		ck.runs.Add(1)
	}
}

// moved tells ck that a commit of Run's moved n items (recorded or
// claimed): every ckptRows of them, it wakes the checkpointer.
func (ck *checkpointer) moved(n int) {
	if ck == nil || n <= 0 {
		return
	}
	if ck.rows.Add(int64(n)) < ckptRows {
		return
	}
	ck.rows.Store(0)
	select {
	case ck.poke <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// close stops the checkpointer, lets a checkpoint in progress end, and
// closes its connection.
func (ck *checkpointer) close() {
	if ck == nil {
		return
	}
	close(ck.stop)
	ck.done.Wait()
	_ = ck.db.Close()
}
