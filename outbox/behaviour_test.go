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
		o, _ := openSQLite(t, outbox.WithPairLimiter(pairs))
		c := newClient(t, meta, cloudapi.WithPairLimiter(pairs))
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
		o, dsn := openSQLite(t, outbox.WithPairLimiter(pairs))
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
		o2, err := outbox.Open(t.Context(), dsn, outbox.WithPairLimiter(pairs2))
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
