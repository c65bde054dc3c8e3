package outbox

import (
	"context"
	"time"
)

// Pacing a takeover. A Run feeds its Client's pair limiter the sends
// recorded in the database that it did not make itself (seedPairs, once;
// with Postgres, seedLane whenever it picks a lane another worker sent
// on), so that a pair another worker sent to keeps its pace: a pair
// charged too little draws 131056 at Meta, one charged too much only
// waits. With write marks (WithWriteMarks) some claims provably never
// wrote their request, and charging their pair for them would hold a lane
// for a debt no message made: such a row is left out. Provably means the
// row can no longer be written either:
//
//   - its claim ended (failed) without its mark, so nothing of it was
//     written and it will not be without a new claim (which sets a new
//     sent_at);
//   - its claim is still sending, unmarked, and its lease has ended: the
//     worker died, or lost the claim, and its mark now fails (a mark is
//     committed only under a live lease, mark.go), so the request is never
//     written.
//
// Every other row counts, as before: a claim still leased may be written
// at any moment, a marked one may have been, and an accepted or
// submitted_unknown item was sent by someone (an unmarked one may be the
// duplicate of another send of its key).

// sqlNeverWritten is true of a row whose request provably never was nor
// will be written (see above); its one parameter is now.
const sqlNeverWritten = `(unwritten_at <> 0 AND unwritten_at = sent_at AND (state = 'failed' OR (state = 'sending' AND lease_until < ?)))`

// sqlNeverWrittenOther is sqlNeverWritten for the row s of pickSQL's
// latest send by another worker in the lane: never a sending one (a lane
// with an item sending is not picked), so it needs no parameter.
const sqlNeverWrittenOther = `(s.unwritten_at <> 0 AND s.unwritten_at = s.sent_at AND s.state = 'failed')`

// sqlOtherSends counts the messages of lane sent at sent_at by workers
// other than owner: one, or a burst's bubbles (claimed together, they
// share their sent_at).
const sqlOtherSends = `SELECT COUNT(*) FROM outbox_items WHERE lane = ? AND sent_at = ? AND owner <> ?
	AND state NOT IN ('queued', 'expired') AND NOT ` + sqlNeverWritten

// otherSends returns how many messages another worker sent on lane at
// sent_at (at least one): a burst of n owes its pair n intervals, and
// charging it as one would send the lane's next item inside its debt.
func (r *runner) otherSends(ctx context.Context, ex execer, now time.Time, lane string, at int64) (int, error) {
	var n int
	if err := r.o.queryRow(ctx, ex, sqlOtherSends, lane, at, r.owner, nanos(now)).Scan(&n); err != nil {
		return 0, err
	}
	return max(n, 1), nil
}
