package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/wapace/wapace/internal/clockwait"
)

// ErrWorkerIDInUse is returned by Run when another live process runs
// under the same WithWorkerID (its heartbeat in the database moved while
// this Run waited for it to lapse), or took the name over from this one
// (which then looked dead: it had not renewed its heartbeat for a lease).
var ErrWorkerIDInUse = errors.New("outbox: worker ID in use by another live process")

// A fixed worker ID (WithWorkerID) names a process, which a supervisor
// may restart under the same name after it died mid-send. Two things
// follow:
//
//   - each Run's claims carry the ID, a random incarnation of the Outbox
//     and the Run's number ("ID/incarnation/n"), so that the claims of a
//     dead incarnation are another owner's: the sweep recovers them once
//     their lease ends, as it does for any dead worker;
//   - the name is held in outbox_workers with a heartbeat, renewed every
//     third of the lease by the Runs of the Outbox holding it. A Run that
//     finds the name held waits for the heartbeat to lapse (at most a
//     lease): a dead process's does and the name is taken over; a live
//     one's moves, and Run returns ErrWorkerIDInUse.
//
// Without WithWorkerID, names are random and nothing is registered.

var (
	sqlWorkerTake = `INSERT INTO outbox_workers (name, incarnation, alive_until) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET incarnation = excluded.incarnation, alive_until = excluded.alive_until
		WHERE outbox_workers.incarnation = excluded.incarnation OR outbox_workers.alive_until < ?`
	sqlWorkerHolder = `SELECT incarnation, alive_until FROM outbox_workers WHERE name = ?`
	sqlWorkerBeat   = `UPDATE outbox_workers SET alive_until = ? WHERE name = ? AND incarnation = ?`
	sqlWorkerLeave  = `DELETE FROM outbox_workers WHERE name = ? AND incarnation = ?`
)

// register takes the Outbox's fixed worker ID for this Run (see above).
func (r *runner) register(ctx context.Context) error {
	o := r.o
	if !o.cfg.ownerFixed {
		return nil
	}
	var seen int64 = -1 // the holder's heartbeat when first seen
	for {
		now := o.cfg.clock.Now()
		res, err := o.exec(ctx, o.db, sqlWorkerTake, o.owner, o.incarnation, nanos(now.Add(o.cfg.lease)), nanos(now))
		if err != nil {
			return fmt.Errorf("outbox: run: registering worker ID %q: %w", o.owner, err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			r.beatAt = now.Add(o.cfg.lease / 3)
			return nil
		}
		var inc string
		var until int64
		err = o.queryRow(ctx, o.db, sqlWorkerHolder, o.owner).Scan(&inc, &until)
		if errors.Is(err, sql.ErrNoRows) {
			continue // released meanwhile
		}
		if err != nil {
			return fmt.Errorf("outbox: run: registering worker ID %q: %w", o.owner, err)
		}
		if seen >= 0 && until != seen {
			return fmt.Errorf("%w: %q (its heartbeat moved while this Run waited for it to lapse)", ErrWorkerIDInUse, o.owner)
		}
		seen = until
		if err := clockwait.Sleep(ctx, o.cfg.clock, fromNanos(until).Sub(now)+time.Millisecond); err != nil {
			return err
		}
	}
}

// beat renews the heartbeat of the Outbox's worker ID when due.
func (r *runner) beat(ctx context.Context, now time.Time) error {
	o := r.o
	if !o.cfg.ownerFixed || now.Before(r.beatAt) {
		return nil
	}
	res, err := o.exec(ctx, o.db, sqlWorkerBeat, nanos(now.Add(o.cfg.lease)), o.owner, o.incarnation)
	if err != nil {
		return fmt.Errorf("outbox: run: renewing worker ID %q: %w", o.owner, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %q was taken over (this process did not renew it for a lease)", ErrWorkerIDInUse, o.owner)
	}
	r.beatAt = now.Add(o.cfg.lease / 3)
	return nil
}

// leave releases the worker ID once the Outbox's last Run ends, and the
// Run's own row (peers.go) always.
func (r *runner) leave(ctx context.Context) {
	o := r.o
	r.leavePeers(ctx)
	if !o.cfg.ownerFixed {
		return
	}
	o.runMu.Lock()
	last := len(o.runners) == 0
	o.runMu.Unlock()
	if last {
		_, _ = o.exec(ctx, o.db, sqlWorkerLeave, o.owner, o.incarnation)
	}
}
