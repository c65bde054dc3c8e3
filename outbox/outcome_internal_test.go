package outbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/errcodes"
)

// TestOutcomeClassification: how Run records each outcome the Client
// gives a send (the errors as the Client builds them). What may have
// reached Meta is never queued again (a double send); what provably did
// not is never left submitted_unknown (a message that never left would go
// to reconciliation), and is charged an attempt only when it was tried.
func TestOutcomeClassification(t *testing.T) {
	meta := func(code errcodes.Code, status int) *errcodes.Error {
		return &errcodes.Error{HTTPStatus: status, Code: code, Message: fmt.Sprintf("(#%d) x", code)}
	}
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	const soon = time.Minute / 2 // a deadline before a refused item's retry
	type want struct {
		state   State
		due     time.Duration // queued: due after now
		counted bool          // queued: the attempt counts
		code    int           // (a queued item keeps none)
	}
	rows := []struct {
		name     string
		res      *cloudapi.Result
		err      error
		attempts int           // the item's attempts, this one included (default 1)
		expires  time.Duration // the item's deadline after now (0: none)
		stopping bool          // Run is stopping (its sends' context ended)
		want     want
	}{
		{name: "accepted", res: &cloudapi.Result{MessageID: "wamid.1"},
			want: want{state: StateAccepted}},
		{name: "duplicate of an accepted send", res: &cloudapi.Result{MessageID: "wamid.1"},
			err:  &cloudapi.SendError{State: cloudapi.StateAccepted, Duplicate: true, Attempts: 1},
			want: want{state: StateAccepted}},
		{name: "duplicate of a send in progress",
			err:  &cloudapi.SendError{State: cloudapi.StateSubmittedUnknown, Duplicate: true, Err: cloudapi.ErrInProgress},
			want: want{state: StateQueued, due: retryAfterInProgress}},
		{name: "duplicate of a send in progress, repeated",
			err:      &cloudapi.SendError{State: cloudapi.StateSubmittedUnknown, Duplicate: true, Err: cloudapi.ErrInProgress},
			attempts: maxDispatches + 3, want: want{state: StateQueued, due: retryAfterInProgress}},
		{name: "duplicate of a send with an unknown outcome",
			err:  &cloudapi.SendError{State: cloudapi.StateSubmittedUnknown, Duplicate: true, Attempts: 1, Err: meta(errcodes.SomethingWentWrong, 500)},
			want: want{state: StateSubmittedUnknown, code: int(errcodes.SomethingWentWrong)}},
		{name: "duplicate of a failed send",
			err:  &cloudapi.SendError{State: cloudapi.StateFailed, Duplicate: true, Attempts: 1, Err: meta(errcodes.Code(131026), 400)},
			want: want{state: StateFailed, code: 131026}},
		{name: "131000 with 500: outcome unknown",
			err:  &cloudapi.SendError{State: cloudapi.StateSubmittedUnknown, Attempts: 1, Err: meta(errcodes.SomethingWentWrong, 500)},
			want: want{state: StateSubmittedUnknown, code: int(errcodes.SomethingWentWrong)}},
		{name: "connection lost after the body was written",
			err:  &cloudapi.SendError{State: cloudapi.StateSubmittedUnknown, Attempts: 1, Err: io.ErrUnexpectedEOF},
			want: want{state: StateSubmittedUnknown}},
		{name: "connection lost after the body was written, run stopping",
			err:      &cloudapi.SendError{State: cloudapi.StateSubmittedUnknown, Attempts: 1, Err: context.Canceled},
			stopping: true, want: want{state: StateSubmittedUnknown}},
		{name: "failed for good",
			err:  &cloudapi.SendError{State: cloudapi.StateFailed, Attempts: 1, Err: meta(errcodes.Code(131026), 400)},
			want: want{state: StateFailed, code: 131026}},
		{name: "pair refusal on every attempt",
			err:  &cloudapi.SendError{State: cloudapi.StateRefused, Attempts: 3, Err: fmt.Errorf("%w: %w", backoff.ErrMaxAttempts, meta(errcodes.PairRateLimit, 400))},
			want: want{state: StateQueued, due: retryAfterRefusals, counted: true}},
		{name: "pair refusal on every attempt, deadline before the retry",
			err:     &cloudapi.SendError{State: cloudapi.StateRefused, Attempts: 3, Err: fmt.Errorf("%w: %w", backoff.ErrMaxAttempts, meta(errcodes.PairRateLimit, 400))},
			expires: soon, want: want{state: StateExpired, code: int(errcodes.PairRateLimit)}},
		{name: "pair refusal on every attempt, dispatched too often",
			err:      &cloudapi.SendError{State: cloudapi.StateRefused, Attempts: 3, Err: fmt.Errorf("%w: %w", backoff.ErrMaxAttempts, meta(errcodes.PairRateLimit, 400))},
			attempts: maxDispatches, want: want{state: StateFailed, code: int(errcodes.PairRateLimit)}},
		{name: "backpressure: could not go before its deadline",
			err:     &cloudapi.BackpressureError{Limit: errcodes.HoldPair, Code: errcodes.PairRateLimit, Wait: time.Hour},
			expires: soon, want: want{state: StateExpired, code: int(errcodes.PairRateLimit)}},
		{name: "connection refused",
			err:  &cloudapi.SendError{State: cloudapi.StateNotSubmitted, Attempts: 1, Err: dial},
			want: want{state: StateQueued, due: retryAfterRefusals, counted: true}},
		{name: "connection refused, deadline before the retry",
			err:     &cloudapi.SendError{State: cloudapi.StateNotSubmitted, Attempts: 1, Err: dial},
			expires: soon, want: want{state: StateExpired}},
		{name: "connection refused, dispatched too often",
			err:      &cloudapi.SendError{State: cloudapi.StateNotSubmitted, Attempts: 1, Err: dial},
			attempts: maxDispatches, want: want{state: StateFailed}},
		{name: "run stopped before the write",
			err:      &cloudapi.SendError{State: cloudapi.StateNotSubmitted, Attempts: 1, Err: context.Canceled},
			stopping: true, want: want{state: StateQueued}},
		{name: "write mark not committed",
			err:  &cloudapi.SendError{State: cloudapi.StateNotSubmitted, Attempts: 1, Err: fmt.Errorf("%w: database is locked", errNotMarked)},
			want: want{state: StateQueued}},
		{name: "refused by the lease's fence: never written",
			err:  &cloudapi.SendError{State: cloudapi.StateNotSubmitted, Attempts: 1, Err: fmt.Errorf("%w (it ended at ...)", errFenced)},
			want: want{state: StateQueued}},
		{name: "refused by the lease's fence, dispatched too often",
			err:      &cloudapi.SendError{State: cloudapi.StateNotSubmitted, Attempts: 1, Err: fmt.Errorf("%w (it ended at ...)", errFenced)},
			attempts: maxDispatches + 3, want: want{state: StateQueued}},
		{name: "idempotency memory full of sends in flight",
			err:  &cloudapi.SendError{State: cloudapi.StateNotSubmitted, Err: cloudapi.ErrIdempotencyMemoryFull},
			want: want{state: StateQueued, due: retryAfterInProgress}},
		{name: "idempotency memory full, dispatched too often",
			err:      &cloudapi.SendError{State: cloudapi.StateNotSubmitted, Err: cloudapi.ErrIdempotencyMemoryFull},
			attempts: maxDispatches + 3, want: want{state: StateQueued, due: retryAfterInProgress}},
		{name: "key names another message: permanent, not retried",
			err: &cloudapi.SendError{State: cloudapi.StateFailed, IdempotencyKey: "k",
				Err: &cloudapi.IdempotencyConflictError{IdempotencyKey: "k"}},
			want: want{state: StateFailed}},
	}
	o, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	r := &runner{o: o, owner: "w1"}
	now := time.Now() // (Enqueue checks deadlines on the real clock)
	stopped, stop := context.WithCancel(t.Context())
	stop()
	for i, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			m := cloudapi.Text(fmt.Sprintf("+23769%07d", i), "x")
			m.IdempotencyKey = fmt.Sprintf("row-%d", i)
			if row.expires > 0 {
				m.ExpiresAt = now.Add(row.expires)
			}
			if _, err := o.Enqueue(t.Context(), "106540352242922", m); err != nil {
				t.Fatal(err)
			}
			attempts := row.attempts
			if attempts == 0 {
				attempts = 1
			}
			if _, err := o.db.ExecContext(t.Context(), `UPDATE outbox_items SET state = 'sending', owner = 'w1', attempts = ?,
				sent_at = ?, lease_until = ? WHERE ikey = ?`, attempts, nanos(now), nanos(now.Add(time.Minute)), m.IdempotencyKey); err != nil {
				t.Fatal(err)
			}
			it := &claimed{Item: Item{Key: m.IdempotencyKey, Attempts: attempts, ExpiresAt: m.ExpiresAt, State: StateSending}}
			sendCtx := t.Context()
			if row.stopping {
				sendCtx = stopped
			}
			recordOutcome(t, r, sendCtx, now, finished{it: it, res: row.res, err: row.err})
			got, err := o.Get(t.Context(), m.IdempotencyKey)
			if err != nil {
				t.Fatal(err)
			}
			var due int64
			if err := o.db.QueryRowContext(t.Context(), `SELECT due_at FROM outbox_items WHERE ikey = ?`, m.IdempotencyKey).Scan(&due); err != nil {
				t.Fatal(err)
			}
			w := row.want
			wantAttempts := attempts
			if w.state == StateQueued && !w.counted {
				wantAttempts--
			}
			if got.State != w.state || got.Attempts != wantAttempts || got.Code != w.code {
				t.Errorf("%v after %d attempts, code %d (%s); want %v after %d, code %d", got.State, got.Attempts, got.Code, got.Reason, w.state, wantAttempts, w.code)
			}
			if w.state == StateQueued && !fromNanos(due).Equal(now.Add(w.due)) {
				t.Errorf("due %v after now, want %v", fromNanos(due).Sub(now), w.due)
			}
			if w.state == StateAccepted && got.MessageID != "wamid.1" {
				t.Errorf("wamid %q, want wamid.1", got.MessageID)
			}
			// The two errors never made: a send that may have reached Meta
			// queued again, one that provably did not left unknown.
			st := cloudapi.StateOf(row.err)
			if st == cloudapi.StateSubmittedUnknown && !errors.Is(row.err, cloudapi.ErrInProgress) && got.State == StateQueued {
				t.Error("a send that may have reached Meta was queued again")
			}
			if (st == cloudapi.StateNotSubmitted || st == cloudapi.StateRefused || errors.Is(row.err, cloudapi.ErrInProgress)) && got.State == StateSubmittedUnknown {
				t.Error("a send that provably did not reach Meta was left submitted_unknown")
			}
		})
	}
}

// recordOutcome records f as r's outcome of a send, at now, in a
// transaction of its own.
func recordOutcome(t *testing.T, r *runner, sendCtx context.Context, now time.Time, f finished) {
	t.Helper()
	tx, err := r.o.db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.outcome(t.Context(), tx, sendCtx, now, f); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// A burst whose send the Client refused as in progress (nothing of it
// written) goes back to the queue whole, no attempt counted: its head for
// the reason, the bubbles after it because their head went back.
func TestBurstInProgressQueuedWhole(t *testing.T) {
	o, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var msgs []cloudapi.Message
	for j := range 3 {
		m := cloudapi.Text("+237690000001", "x")
		m.IdempotencyKey = fmt.Sprintf("b-%d", j)
		msgs = append(msgs, m)
	}
	if _, err := o.EnqueueBurst(t.Context(), "106540352242922", msgs...); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := o.db.ExecContext(t.Context(), `UPDATE outbox_items SET state = 'sending', owner = 'w1', attempts = 1, sent_at = ?, lease_until = ?`,
		nanos(now), nanos(now.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	var burst string
	if err := o.db.QueryRowContext(t.Context(), `SELECT burst FROM outbox_items WHERE ikey = 'b-0'`).Scan(&burst); err != nil || burst == "" {
		t.Fatalf("burst %q, %v", burst, err)
	}
	var all []*claimed
	for _, m := range msgs {
		all = append(all, &claimed{Item: Item{Key: m.IdempotencyKey, Attempts: 1, State: StateSending}, burstKey: burst})
	}
	head := finished{it: all[0], err: &cloudapi.SendError{State: cloudapi.StateSubmittedUnknown, Duplicate: true, Err: cloudapi.ErrInProgress}}
	for _, it := range all[1:] {
		head.rest = append(head.rest, finished{it: it, err: errBurstCut, cut: true})
	}
	r := &runner{o: o, owner: "w1"}
	tx, err := o.db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.record(t.Context(), tx, t.Context(), now, []finished{head}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		it, err := o.Get(t.Context(), m.IdempotencyKey)
		if err != nil {
			t.Fatal(err)
		}
		if it.State != StateQueued || it.Attempts != 0 {
			t.Errorf("%s: %v after %d attempts (%s), want queued after 0", it.Key, it.State, it.Attempts, it.Reason)
		}
	}
}
