package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// On Postgres a claim locks the lane's head (FOR UPDATE SKIP LOCKED) and
// reads the rest of its burst: the operator expiring a member of the
// burst while the claim is being decided (here: from the Revalidate hook,
// on another connection) either wins (the member stays expired, never
// sent) or is refused (ErrWrongState, the member is sent); and the
// counters equal a recount (schema 6 records the claim's transitions as
// leaving queued: a claim overwriting the expiry counted it twice, and
// Drain waited forever on a queued counter of -1).
func TestPostgresExpireBurstMemberDuringClaim(t *testing.T) {
	dsn := requirePostgres(t)
	ctx := t.Context()
	var o *outbox.Outbox
	expired := make(chan error, 1)
	reval := func(ctx context.Context, it outbox.Item) error {
		if it.Key != "b0" || len(expired) > 0 {
			return nil
		}
		done := make(chan error, 1)
		go func() {
			_, err := o.Expire(context.WithoutCancel(ctx), "b2", "changed my mind")
			done <- err
		}()
		select {
		case err := <-done:
			expired <- err
		case <-time.After(500 * time.Millisecond):
			// Waiting for the claim's lock: answered after it commits.
			go func() { expired <- <-done }()
		}
		return nil
	}
	o, err := outbox.Open(ctx, dsn, outbox.WithRevalidate(reval))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var msgs []cloudapi.Message
	for i := range 4 {
		m := cloudapi.Text(recipient(1), fmt.Sprintf("bubble %d", i))
		m.IdempotencyKey = fmt.Sprintf("b%d", i)
		msgs = append(msgs, m)
	}
	if _, err := o.EnqueueBurst(ctx, from, msgs...); err != nil {
		t.Fatal(err)
	}
	meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1000))
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	go func() {
		// Until everything is done (Drain would wait forever on drifted
		// counters).
		for rctx.Err() == nil {
			var n int
			if err := db.QueryRowContext(rctx, `SELECT COUNT(*) FROM outbox_items WHERE state IN ('queued', 'sending')`).Scan(&n); err == nil && n == 0 {
				cancel()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	_ = o.Run(rctx, newClient(t, meta, cloudapi.WithPairLimiter(pairlimit.New(fastPairs))))
	cancel()
	eerr := <-expired
	sent := false
	for _, r := range meta.Requests() {
		sent = sent || r.CallbackData == "b2"
	}
	it, err := o.Get(ctx, "b2")
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case eerr == nil && (sent || it.State != outbox.StateExpired):
		t.Errorf("b2 expired by the operator, then %v (sent: %v)", it.State, sent)
	case eerr != nil && !errors.Is(eerr, outbox.ErrWrongState):
		t.Errorf("Expire: %v", eerr)
	case eerr != nil && (!sent || it.State != outbox.StateAccepted):
		t.Errorf("Expire refused, then b2 %v (sent: %v)", it.State, sent)
	}
	checkCountsByNumber(t, db, true)
}

// The upgrade of a big queue (200,000 items) to schema 6 adds a column
// without rewriting the rows (SQLite stores the default in the schema),
// and Open takes well under a second of work for it (logged). Schema 7
// does rewrite every row once, to store its lane's number (a small
// integer): the file grows by that column and the page splits it causes
// (about 12 % here), not by a copy of the rows. Skipped with -short.
func TestUpgradeFromV5SQLiteBig(t *testing.T) {
	if testing.Short() {
		t.Skip("200,000 items")
	}
	path := copyFixture(t, "v5.db")
	ctx := t.Context()
	db, err := sql.Open("sqlite", outbox.SQLiteSource(path))
	if err != nil {
		t.Fatal(err)
	}
	const n = 200000
	for _, q := range []string{
		`WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ` + fmt.Sprint(n) + `)
		INSERT INTO outbox_items (ikey, seq, lane, sender, recipient, kind, message, state, enqueued_at, due_at, expires_at, state_at)
		SELECT 'big-' || i, i, 'lane-' || (i % 5000), '` + from + `', '+2376' || (i % 5000), 'text', '{"type":"text","text":{"body":"x"}}',
			'queued', 1, 1, 0, 1 FROM k`,
		`DELETE FROM outbox_counts`,
		`INSERT INTO outbox_counts (sender, state, n) SELECT sender, state, COUNT(*) FROM outbox_items GROUP BY sender, state`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	o, err := outbox.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	defer o.Close()
	checkCountsByNumber(t, o.DB(), false)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Open (migrating %d items): %v; file %d -> %d bytes", n, took, before.Size(), after.Size())
	if after.Size() > before.Size()+before.Size()/5 {
		t.Errorf("the file grew from %d to %d bytes: the rows were copied", before.Size(), after.Size())
	}
}

// On Postgres the acceptances (recorded by their own statement since
// schema 6, not by the trigger) still notify the other workers that a
// lane is free: a listener sees a notification after the enqueues', from
// Run's acceptances alone (a claim notifies nothing).
func TestPostgresAcceptanceNotifies(t *testing.T) {
	dsn := requirePostgres(t)
	ctx := t.Context()
	o, err := outbox.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for i := range 3 {
		if _, err := o.Enqueue(ctx, from, cloudapi.Text(recipient(i+1), "x")); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN wapace_outbox"); err != nil {
		t.Fatal(err)
	}
	meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1000))
	runDrain(t, o, newClient(t, meta, cloudapi.WithPairLimiter(pairlimit.New(fastPairs))))
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := conn.WaitForNotification(wctx); err != nil {
		t.Fatalf("no notification after the acceptances: %v", err)
	}
}

// A claim whose history cannot be written (the statement after its
// UPDATE fails; SQLite) is rolled back whole: no item left sending, the
// counters equal a recount, and once the fault is gone everything is
// sent with one history row per transition.
func TestClaimRolledBackWhenItsHistoryFails(t *testing.T) {
	o, meta, c := faultyHistory(t, "sending")
	ctx, db := t.Context(), o.DB()
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	rerr := o.Run(rctx, c)
	cancel()
	if rerr == nil || !strings.Contains(rerr.Error(), "injected fault") {
		t.Fatalf("Run: %v, want the injected fault", rerr)
	}
	if n := len(meta.Requests()); n != 0 {
		t.Fatalf("%d requests sent without a recorded claim", n)
	}
	checkCountsByNumber(t, db, false)
	var sending, hist int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM outbox_items WHERE state <> 'queued'), (SELECT COUNT(*) FROM outbox_history)`).Scan(&sending, &hist); err != nil {
		t.Fatal(err)
	}
	if sending != 0 || hist != 0 {
		t.Fatalf("after the failed claims: %d items not queued, %d history rows", sending, hist)
	}
	if _, err := db.ExecContext(ctx, `DROP TRIGGER fault`); err != nil {
		t.Fatal(err)
	}
	runDrain(t, o, c)
	checkCountsByNumber(t, db, false)
	var bad int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_items i WHERE i.state <> 'accepted'
		OR (SELECT COUNT(*) FROM outbox_history h WHERE h.item = i.id) <> 2`).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Fatalf("%d items not accepted with a history of sending, accepted", bad)
	}
}

// Acceptances whose history cannot be written (SQLite) are rolled back
// whole: the counters equal a recount, no item is accepted without its
// history row, none was sent twice.
func TestAcceptancesRolledBackWhenTheirHistoryFails(t *testing.T) {
	o, meta, c := faultyHistory(t, "accepted")
	ctx, db := t.Context(), o.DB()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	rerr := o.Run(rctx, c)
	cancel()
	if rerr == nil || !strings.Contains(rerr.Error(), "injected fault") {
		t.Fatalf("Run: %v, want the injected fault", rerr)
	}
	checkCountsByNumber(t, db, false)
	var accepted, hist int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM outbox_items WHERE state = 'accepted'),
		(SELECT COUNT(*) FROM outbox_history WHERE state = 'accepted')`).Scan(&accepted, &hist); err != nil {
		t.Fatal(err)
	}
	if accepted != 0 || hist != 0 {
		t.Fatalf("after the failed acceptances: %d items accepted, %d history rows", accepted, hist)
	}
	seen := map[string]bool{}
	for _, r := range meta.Requests() {
		if seen[r.To] {
			t.Fatalf("%s sent twice", r.To)
		}
		seen[r.To] = true
	}
}

// faultyHistory opens an outbox (SQLite) holding five queued texts whose
// history refuses rows of state (a trigger raising "injected fault";
// drop it with DROP TRIGGER fault), and a fake Meta and a client to send
// them with.
func faultyHistory(t *testing.T, state string) (*outbox.Outbox, *cloudapitest.Server, *cloudapi.Client) {
	t.Helper()
	o, _ := openSQLite(t)
	ctx := t.Context()
	for i := range 5 {
		if _, err := o.Enqueue(ctx, from, cloudapi.Text(recipient(i+1), "x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := o.DB().ExecContext(ctx, `CREATE TRIGGER fault BEFORE INSERT ON outbox_history WHEN new.state = '`+state+`'
		BEGIN SELECT RAISE(FAIL, 'injected fault'); END`); err != nil {
		t.Fatal(err)
	}
	meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1000))
	return o, meta, newClient(t, meta, cloudapi.WithPairLimiter(pairlimit.New(fastPairs)))
}
