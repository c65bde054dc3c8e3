package outbox_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

func TestRejectAtEnqueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, _ := openSQLite(t, outbox.WithLaneCapacity(3))
		ctx := t.Context()
		now := time.Now()
		// Invalid: nothing stored.
		_, err := o.Enqueue(ctx, from, cloudapi.Text("not a number", "hi"))
		var ve *cloudapi.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("invalid message: %v", err)
		}
		// Already expired.
		m := cloudapi.Text(recipient(1), "late")
		m.ExpiresAt = now.Add(-time.Second)
		_, err = o.Enqueue(ctx, from, m)
		if !errors.Is(err, outbox.ErrExpired) {
			t.Fatalf("expired: %v", err)
		}
		var bp *cloudapi.BackpressureError
		if !errors.As(err, &bp) || cloudapi.StateOf(err) != cloudapi.StateRefused {
			t.Fatalf("expired is not a backpressure error: %v", err)
		}
		// The lane's depth at 6 s per message passes a 10 s deadline at
		// the third message.
		for i := range 3 {
			m := cloudapi.Text(recipient(2), "x")
			m.ExpiresAt = now.Add(10 * time.Second)
			_, err := o.Enqueue(ctx, from, m)
			if i < 2 && err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			if i == 2 {
				var re *outbox.RejectError
				if !errors.Is(err, outbox.ErrExpired) || !errors.As(err, &re) || re.Code != errcodes.PairRateLimit || re.RetryAfter() != 12*time.Second {
					t.Fatalf("third message: %v", err)
				}
				if !errors.Is(err, errcodes.PairRateLimit) {
					t.Fatalf("errors.Is(err, 131056) = false")
				}
			}
		}
		// Lane capacity.
		for i := range 4 {
			_, err := o.Enqueue(ctx, from, cloudapi.Text(recipient(3), "x"))
			if i == 3 {
				var re *outbox.RejectError
				if !errors.Is(err, outbox.ErrQueueFull) || !errors.As(err, &re) || re.Full != "lane" {
					t.Fatalf("fourth message: %v", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
		}
		// An existing key stores nothing new.
		m = cloudapi.Text(recipient(4), "once")
		m.IdempotencyKey = "order-42"
		t1, err := o.Enqueue(ctx, from, m)
		if err != nil {
			t.Fatal(err)
		}
		t2, err := o.Enqueue(ctx, from, m)
		if err != nil || !t2.Existing || t1.Existing || t2.Key != "order-42" {
			t.Fatalf("second enqueue: %+v %v", t2, err)
		}
		st, err := o.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Counts[outbox.StateQueued]; got != 6 {
			t.Fatalf("queued %d, want 6 (nothing stored for rejections)", got)
		}
		if st.DeepestLane != 3 || st.Lanes != 3 {
			t.Fatalf("snapshot %+v", st)
		}
	})
}

// Items whose deadline passes while queued are dead-lettered and never
// reach Meta.
func TestExpiryDeadLetters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		pairs := pairlimit.New(pairlimit.Meta)
		c := newClient(t, meta, cloudapi.WithPairLimiter(pairs))
		o, _ := openSQLite(t, outbox.WithClient(c))
		now := time.Now()
		var keys []string
		for i := range 4 { // lane 1 (20 s), then lanes 2 and 3 (5 s)
			m := cloudapi.Text(recipient(1), "x")
			m.ExpiresAt = now.Add(20 * time.Second)
			if i >= 2 {
				m = cloudapi.Text(recipient(i), "x")
				m.ExpiresAt = now.Add(5 * time.Second)
			}
			tk, err := o.Enqueue(t.Context(), from, m)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, tk.Key)
		}
		// Nothing runs for 6 s: the last two expire while queued.
		time.Sleep(6 * time.Second)
		runFor(t, o, c, time.Minute)
		want := []outbox.State{outbox.StateAccepted, outbox.StateAccepted, outbox.StateExpired, outbox.StateExpired}
		for i, k := range keys {
			if it := mustGet(t, o, k); it.State != want[i] {
				t.Errorf("item %d: %v (%s), want %v", i, it.State, it.Reason, want[i])
			}
		}
		if got := meta.Accepted(); got != 2 {
			t.Fatalf("meta accepted %d, want 2", got)
		}
		st, _ := o.Snapshot(t.Context())
		if st.DeadLetters != 2 {
			t.Fatalf("dead letters %d", st.DeadLetters)
		}
	})
}

// Stop and restart in-process: cancel Run, Close, Open the same file, Run:
// everything finishes, nothing twice.
func TestStopRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		pairs := pairlimit.New(pairlimit.Meta)
		o, dsn := openSQLite(t)
		var keys []string
		for i := range 30 {
			for range 3 {
				tk, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(i), "x"))
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, tk.Key)
			}
		}
		runFor(t, o, newClient(t, meta, cloudapi.WithPairLimiter(pairs)), 7*time.Second) // about two per lane
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
		first := meta.Accepted()
		if first == 0 || first == 90 {
			t.Fatalf("first run accepted %d", first)
		}
		pairs2 := pairlimit.New(pairlimit.Meta) // a new process knows nothing
		o2, err := outbox.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer o2.Close()
		runFor(t, o2, newClient(t, meta, cloudapi.WithPairLimiter(pairs2)), time.Minute)
		if got := meta.Accepted(); got != 90 {
			t.Fatalf("accepted %d, want 90", got)
		}
		seen := map[string]int{}
		for _, r := range meta.Requests() {
			if r.Accepted {
				seen[r.CallbackData]++
			}
		}
		for _, k := range keys {
			if seen[k] != 1 {
				t.Fatalf("key %s accepted %d times", k, seen[k])
			}
			if it := mustGet(t, o2, k); it.State != outbox.StateAccepted {
				t.Fatalf("item %s: %v", k, it.State)
			}
		}
		if n := meta.Count(errcodes.PairRateLimit); n != 0 {
			t.Fatalf("%d x 131056 after restart", n)
		}
	})
}

// An unknown outcome is never resent without a policy, is settled by a
// status webhook, and with a policy is resent once, recorded.
func TestUnknownReconcileAndResend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		o, _ := openSQLite(t, outbox.WithResend(outbox.ResendPolicy{After: time.Hour, Max: 1}))
		c := newClient(t, meta)
		meta.Script(cloudapitest.Failure{Status: 502}, cloudapitest.Failure{Status: 502})
		a, _ := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "a"))
		b, _ := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(2), "b"))
		runFor(t, o, c, time.Minute)
		for _, k := range []string{a.Key, b.Key} {
			if it := mustGet(t, o, k); it.State != outbox.StateSubmittedUnknown {
				t.Fatalf("%s: %v", k, it.State)
			}
		}
		// A status for a: delivered.
		var ra cloudapitest.Request
		for _, r := range meta.Requests() {
			if r.CallbackData == a.Key {
				ra = r
			}
		}
		ra.MessageID = "wamid.A"
		n, err := webhook.Parse(meta.StatusBody(cloudapitest.Delivered(ra)))
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Reconcile(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		if it := mustGet(t, o, a.Key); it.State != outbox.StateDelivered {
			t.Fatalf("a after webhook: %v", it.State)
		}
		// b: no status for an hour: the policy resends it once, recorded.
		runFor(t, o, c, 2*time.Hour)
		it := mustGet(t, o, b.Key)
		if it.Resends != 1 {
			t.Fatalf("b resends %d (%v)", it.Resends, it.State)
		}
		if it.State != outbox.StateAccepted {
			t.Fatalf("b after its resend: %v (%s)", it.State, it.Reason)
		}
		var resent []string
		for _, r := range meta.Requests() {
			if r.Accepted {
				resent = append(resent, r.CallbackData)
			}
		}
		if len(resent) != 1 || resent[0] != b.Key+"#r1" {
			t.Fatalf("accepted requests %q, want the resend of b", resent)
		}
		found := false
		for _, tr := range it.History {
			if tr.State == outbox.StateQueued && tr.Reason != "" {
				found = true
			}
		}
		if !found {
			t.Fatalf("resend not recorded: %+v", it.History)
		}
	})
}

func TestServiceWindowAndRevalidate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		dropped := 0
		o, _ := openSQLite(t, outbox.WithServiceWindow(outbox.DefaultServiceWindow),
			outbox.WithRevalidate(func(ctx context.Context, it outbox.Item) error {
				if it.To == "237690000009" {
					dropped++
					return errors.Join(outbox.ErrDrop, errors.New("consent withdrawn"))
				}
				return nil
			}))
		c := newClient(t, meta)
		_, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "hi"))
		var re *outbox.RejectError
		if !errors.Is(err, outbox.ErrOutsideWindow) || !errors.As(err, &re) || re.Code != errcodes.ReEngagement {
			t.Fatalf("free-form outside window: %v", err)
		}
		// Templates need no window.
		tk, err := o.Enqueue(t.Context(), from, cloudapi.Template(recipient(9), "order_update", "en"))
		if err != nil {
			t.Fatal(err)
		}
		// An inbound message opens the window.
		body := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"1","phone_number_id":"` + from + `"},"messages":[{"from":"237690000001","id":"wamid.in","timestamp":"` + itoa(time.Now().Unix()) + `","type":"text","text":{"body":"hello"}}]}}]}]}`)
		n, err := webhook.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Reconcile(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		ok, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "hi"))
		if err != nil {
			t.Fatal(err)
		}
		runFor(t, o, c, time.Minute)
		if it := mustGet(t, o, ok.Key); it.State != outbox.StateAccepted {
			t.Fatalf("inside window: %v %s", it.State, it.Reason)
		}
		if it := mustGet(t, o, tk.Key); it.State != outbox.StateFailed || dropped != 1 {
			t.Fatalf("revalidation: %v %s", it.State, it.Reason)
		}
		if meta.Accepted() != 1 {
			t.Fatalf("meta accepted %d", meta.Accepted())
		}
	})
}

func itoa(n int64) string { return fmtInt(n) }

// An item claimed by a worker that died mid-request becomes
// submitted_unknown once its lease ends, and is never sent again; the rest
// of its lane goes on.
func TestDeadClaimBecomesUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		pairs := pairlimit.New(pairlimit.Meta)
		o, _ := openSQLite(t, outbox.WithLease(time.Minute))
		a, _ := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "a"))
		b, _ := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "b"))
		// Another worker claimed a and died: its lease ends in 30 s.
		if _, err := o.DB().ExecContext(t.Context(), `UPDATE outbox_items SET state = 'sending', owner = 'dead', lease_until = ?, sent_at = ? WHERE ikey = ?`,
			time.Now().Add(30*time.Second).UnixNano(), time.Now().UnixNano(), a.Key); err != nil {
			t.Fatal(err)
		}
		c := newClient(t, meta, cloudapi.WithPairLimiter(pairs))
		runFor(t, o, c, 20*time.Second)
		if it := mustGet(t, o, b.Key); it.State != outbox.StateQueued {
			t.Fatalf("b went before a's claim ended: %v", it.State)
		}
		runFor(t, o, c, time.Minute)
		ia := mustGet(t, o, a.Key)
		if ia.State != outbox.StateSubmittedUnknown || ia.Reason == "" {
			t.Fatalf("a: %v %q", ia.State, ia.Reason)
		}
		if ib := mustGet(t, o, b.Key); ib.State != outbox.StateAccepted {
			t.Fatalf("b: %v %q", ib.State, ib.Reason)
		}
		for _, r := range meta.Requests() {
			if r.CallbackData == a.Key {
				t.Fatal("a was sent again")
			}
		}
	})
}

// A lane whose pair is in debt waits on the clock holding no send, and
// never delays another lane.
func TestHeldLaneHoldsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		pairs := pairlimit.New(pairlimit.Meta)
		o, _ := openSQLite(t, outbox.WithConcurrency(1))
		p, _ := pairlimit.NewPair(from, recipient(1))
		pairs.ReserveN(time.Now(), p, 10) // the pair owes 60 s
		a, _ := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "a"))
		var others []string
		for i := 2; i < 6; i++ {
			tk, _ := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(i), "x"))
			others = append(others, tk.Key)
		}
		c := newClient(t, meta, cloudapi.WithPairLimiter(pairs))
		runFor(t, o, c, 5*time.Second) // one send at a time: a would block them all
		for _, k := range others {
			if it := mustGet(t, o, k); it.State != outbox.StateAccepted {
				t.Fatalf("%s: %v", k, it.State)
			}
		}
		if it := mustGet(t, o, a.Key); it.State != outbox.StateQueued {
			t.Fatalf("a: %v", it.State)
		}
		runFor(t, o, c, time.Minute)
		if it := mustGet(t, o, a.Key); it.State != outbox.StateAccepted {
			t.Fatalf("a after its pair's debt: %v", it.State)
		}
		if n := meta.Count(errcodes.PairRateLimit); n != 0 {
			t.Fatalf("%d x 131056", n)
		}
	})
}

// The window is checked again right before sending: a free-form message
// whose window closed while it was queued fails with 131047 unsent.
func TestWindowClosesWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		o, _ := openSQLite(t, outbox.WithServiceWindow(outbox.DefaultServiceWindow))
		body := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"1","phone_number_id":"` + from + `"},"messages":[{"from":"237690000001","id":"wamid.in","timestamp":"` + itoa(time.Now().Unix()) + `","type":"text","text":{"body":"hello"}}]}}]}]}`)
		n, err := webhook.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Reconcile(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		tk, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "hi"))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(25 * time.Hour)
		runFor(t, o, newClient(t, meta), time.Minute)
		it := mustGet(t, o, tk.Key)
		if it.State != outbox.StateFailed || it.Code != int(errcodes.ReEngagement) {
			t.Fatalf("%v %d %q", it.State, it.Code, it.Reason)
		}
		if len(meta.Requests()) != 0 {
			t.Fatal("sent outside the window")
		}
	})
}

// With an idle wake (the Postgres default), an item behind a held lane
// head still expires at its deadline, not at the next idle wake.
func TestExpiryWithIdleWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		pairs := pairlimit.New(pairlimit.Meta)
		var expiredAt time.Time
		o, _ := openSQLite(t, outbox.WithIdleWake(time.Hour),
			outbox.WithObserver(func(e outbox.Event) {
				if e.State == outbox.StateExpired {
					expiredAt = e.At
				}
			}))
		p, _ := pairlimit.NewPair(from, recipient(1))
		pairs.ReserveN(time.Now(), p, 10) // the lane waits 60 s
		start := time.Now()
		if _, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "head")); err != nil {
			t.Fatal(err)
		}
		m := cloudapi.Text(recipient(1), "behind")
		m.ExpiresAt = start.Add(30 * time.Second)
		if _, err := o.Enqueue(t.Context(), from, m); err != nil {
			t.Fatal(err)
		}
		runFor(t, o, newClient(t, meta, cloudapi.WithPairLimiter(pairs)), 45*time.Second)
		if got := expiredAt.Sub(start); got != 30*time.Second {
			t.Fatalf("expired after %v, want 30s", got)
		}
	})
}

// EnqueueTx commits or rolls back with the caller's own rows.
func TestEnqueueTx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		o, _ := openSQLite(t)
		ctx := t.Context()
		db := o.DB()
		if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id TEXT PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
		order := func(id string, commit bool) string {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id) VALUES (?)`, id); err != nil {
				t.Fatal(err)
			}
			m := cloudapi.Text(recipient(1), "order "+id+" confirmed")
			m.IdempotencyKey = "order-" + id
			tk, err := o.EnqueueTx(ctx, tx, from, m)
			if err != nil {
				t.Fatal(err)
			}
			if commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			o.Wake()
			return tk.Key
		}
		rolledBack := order("1", false)
		committed := order("2", true)
		if _, err := o.Get(ctx, rolledBack); !errors.Is(err, outbox.ErrNotFound) {
			t.Fatalf("rolled back item: %v", err)
		}
		runFor(t, o, newClient(t, meta), time.Minute)
		if it := mustGet(t, o, committed); it.State != outbox.StateAccepted {
			t.Fatalf("committed item: %v", it.State)
		}
		if len(meta.Requests()) != 1 {
			t.Fatalf("%d requests", len(meta.Requests()))
		}
	})
}
