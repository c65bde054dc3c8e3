package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

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
