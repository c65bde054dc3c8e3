package outbox

import (
	"context"
	"fmt"
	"strings"
)

// Bounces.
//
// An item the Client refuses locally, before writing a byte, goes back to
// its lane's head with its attempt uncounted (requeue with unsent): a
// send with its key still in progress in this process
// (cloudapi.ErrInProgress), the Client's idempotency memory full of sends
// in flight (cloudapi.ErrIdempotencyMemoryFull), the lease's fence
// (errFenced), a write mark not committed (errNotMarked), Run stopping.
// Each such bounce is a claim and a requeue: two rows of history (sending,
// queued). While the cause lasts (a key in progress for a request's whole
// timeout, a memory full for as long as Meta answers slowly) an item
// bounces again and again, every second or at once, and its history grew
// without bound, each row saying the same thing.
//
// foldBounce keeps it bounded and truthful: a bounce for the same reason
// as the one just before it (the item's last rows are queued for that
// reason, sending, queued for it again) removes its two rows and counts it
// in the first bounce's row instead, whose reason then ends in "(n
// times)". The first bounce keeps its instant; the claim that ends the
// run of bounces follows it. An item's history thus holds at most two rows
// per change of reason, however long it bounces.

// sqlLastHistory reads an item's last three history rows, newest first;
// sqlDropHistory removes two rows, sqlBounceReason rewrites one's reason.
const (
	sqlLastHistory = `SELECT id, state, reason FROM outbox_history
		WHERE item = (SELECT id FROM outbox_items WHERE ikey = ?) ORDER BY id DESC LIMIT 3`
	sqlDropHistory  = `DELETE FROM outbox_history WHERE id IN (?, ?)`
	sqlBounceReason = `UPDATE` + orFail + ` outbox_history SET reason = ? WHERE id = ?`
)

// foldBounce folds the bounce of key's item just recorded (its requeue,
// for reason, the last row of its history) into the bounce before it, if
// that one was for the same reason and nothing but its claim came
// between (see above).
func (o *Outbox) foldBounce(ctx context.Context, ex execer, key, reason string) error {
	rows, err := o.query(ctx, ex, sqlLastHistory, key)
	if err != nil {
		return err
	}
	type row struct {
		id            int64
		state, reason string
	}
	var last []row
	for rows.Next() {
		var h row
		if err := rows.Scan(&h.id, &h.state, &h.reason); err != nil {
			rows.Close()
			return err
		}
		last = append(last, h)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(last) < 3 {
		return nil
	}
	now, claim, before := last[0], last[1], last[2]
	if now.state != StateQueued.String() || now.reason != reason || claim.state != StateSending.String() || before.state != StateQueued.String() {
		return nil
	}
	n, ok := bounces(before.reason, reason)
	if !ok {
		return nil
	}
	if _, err := o.exec(ctx, ex, sqlDropHistory, now.id, claim.id); err != nil {
		return err
	}
	_, err = o.exec(ctx, ex, sqlBounceReason, bounceReason(reason, n+1), before.id)
	return err
}

// bounceReason is the reason of a history row standing for n bounces for
// reason.
func bounceReason(reason string, n int) string {
	if n <= 1 {
		return reason
	}
	return fmt.Sprintf("%s (%d times)", reason, n)
}

// bounces reports how many bounces for reason the history row whose
// reason is got stands for, and whether it stands for any.
func bounces(got, reason string) (int, bool) {
	rest, ok := strings.CutPrefix(got, reason)
	if !ok {
		return 0, false
	}
	if rest == "" {
		return 1, true
	}
	var n int
	if _, err := fmt.Sscanf(rest, " (%d times)", &n); err != nil || n < 2 || bounceReason(reason, n) != got {
		return 0, false
	}
	return n, true
}
