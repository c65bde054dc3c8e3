package outbox

import (
	"context"
	"sync/atomic"
	"time"
)

// How Runs on one Postgres outbox share its numbers.
//
// Each Run wants in flight what its numbers need (inflight.go). Runs on
// one Postgres outbox pick from one queue in due order, so each sends for
// every number with due lanes, and their Clients, sharing a Store
// (redisstore), share each number's figure. N Runs each sized for the
// whole figure would claim N times what the number needs: the surplus
// waits in the Clients for the number's slots, makes every claim older,
// and is left submitted_unknown by a crash. (Clients that do not share a
// Store pace each number N times over, and Meta refuses the excess: the
// figure is the number's, whoever sends.)
//
// So each Run counts the Runs sending on the outbox, itself included, and
// wants for each number its share of the figure: the want of
// ceil(R / N) a second (at least one send in flight, as ever; the shares
// add up to the number's want and N sends more). A Run holds a row in
// outbox_workers, named "\n" and its owner (no WithWorkerID can be: it
// holds no newline), whose heartbeat it renews while it steps, every
// peerBeat, reading the others' in the same statement: a Run alive until
// peerAlive after its last step counts. So:
//
//   - a Run that dies (killed, its database out of reach) is counted out
//     within peerAlive + peerBeat, and the others' wants grow back;
//   - a Run that joins counts itself at its first step, and the others
//     count it within peerBeat; a count that changed is taken again after
//     peerRecount, since Runs started together each see only those that
//     beat before them (until then, they claim as if alone: for a moment
//     after a fleet starts, the Runs claim up to N times what is needed);
//   - a Run that ends removes its row (Run's leave), and one with nothing
//     due lets it lapse: it sends nothing, and the others may use the
//     number whole; it is counted again at its next step. (So does one
//     whose sends all wait longer than peerAlive without a step, a
//     number held for seconds: the others may then claim more than the
//     number needs until it steps again, never less);
//   - rows lapsed for over peerForget are removed by the next beat (of a
//     Run that died: it could not remove its own).
//
// A beat that fails keeps the count as it was: sizing is never a reason
// to stop sending. With SQLite nothing changes: one Run sends alone.
const (
	peerBeat    = time.Second
	peerAlive   = 3 * time.Second
	peerForget  = time.Minute
	peerRecount = peerBeat / 10
)

// peerPrefix starts the name of a Run's row in outbox_workers.
const peerPrefix = "\n"

// sqlPeerBeat renews this Run's row ($1, incarnation $2, alive until $3),
// removes the other Runs' rows lapsed before $5 (its own is renewed: one
// statement may not change a row twice), and counts the other Runs' rows
// alive at $6 ($4 matches the Runs' names). (One snapshot: the count
// does not see the row renewed, hence "name <> $1", nor the removals.)
const sqlPeerBeat = `WITH beat AS (INSERT INTO outbox_workers (name, incarnation, alive_until) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET alive_until = excluded.alive_until RETURNING 1),
	gone AS (DELETE FROM outbox_workers WHERE name LIKE $4 AND name <> $1 AND alive_until < $5 RETURNING 1)
	SELECT COUNT(*) FROM outbox_workers WHERE name LIKE $4 AND name <> $1 AND alive_until > $6`

// sqlPeerLeave removes this Run's row.
const sqlPeerLeave = `DELETE FROM outbox_workers WHERE name = $1`

// peers is what a Run knows of the Runs sharing its outbox.
type peers struct {
	n      atomic.Int64 // the Runs counted at the last beat, itself included (0: none yet)
	beatAt time.Time    // when to beat next
}

// count returns how many Runs share the outbox (at least 1).
func (p *peers) count() int { return int(max(1, p.n.Load())) }

// peerName is the name of r's row in outbox_workers.
func (r *runner) peerName() string { return peerPrefix + r.owner }

// beatPeers renews r's heartbeat and counts the Runs sharing the outbox,
// when due (Postgres only). It reports whether the count changed.
func (r *runner) beatPeers(ctx context.Context, now time.Time) bool {
	o := r.o
	if !o.d.postgres || now.Before(r.peers.beatAt) {
		return false
	}
	r.peers.beatAt = now.Add(peerBeat)
	var others int64
	err := o.queryRow(ctx, o.db, sqlPeerBeat, r.peerName(), o.incarnation, nanos(now.Add(peerAlive)),
		peerPrefix+"%", nanos(now.Add(-peerForget)), nanos(now)).Scan(&others)
	if err != nil {
		return false // kept as it was (see above)
	}
	if r.peers.n.Swap(others+1) == others+1 {
		return false
	}
	// A change may be one of several (Runs started together each count
	// those that beat before them): look again soon.
	r.peers.beatAt = now.Add(peerRecount)
	return true
}

// leavePeers removes r's row (Postgres only).
func (r *runner) leavePeers(ctx context.Context) {
	if r.o.d.postgres {
		_, _ = r.o.exec(ctx, r.o.db, sqlPeerLeave, r.peerName())
	}
}

// share is number mps's figure shared by the Runs counted: ceil(mps / n).
func (p *peers) share(mps int) int {
	n := p.count()
	if n <= 1 || mps <= 0 {
		return mps
	}
	return (mps + n - 1) / n
}
