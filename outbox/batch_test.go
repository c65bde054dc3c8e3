package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// runDrain runs o with c until Drain returns (within a minute).
func runDrain(t *testing.T, o *outbox.Outbox, c *cloudapi.Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- o.Run(ctx, c) }()
	dctx, dcancel := context.WithTimeout(t.Context(), time.Minute)
	defer dcancel()
	derr := o.Drain(dctx)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if derr != nil {
		t.Fatalf("Drain: %v", derr)
	}
}

// checkCounts compares Snapshot's counters with a count of the rows.
func checkCounts(t *testing.T, o *outbox.Outbox) map[outbox.State]int {
	t.Helper()
	st, err := o.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := o.DB().QueryContext(t.Context(), `SELECT state, COUNT(*) FROM outbox_items GROUP BY state`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		want[s] = n
	}
	got := map[string]int{}
	for s, n := range st.Counts {
		got[s.String()] = n
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("counters %v, rows %v", got, want)
	}
	return st.Counts
}

func TestEnqueueMany(t *testing.T) {
	o, _ := openSQLite(t, outbox.WithLaneCapacity(2))
	ctx := t.Context()
	dup := cloudapi.Text(recipient(9), "first")
	dup.IdempotencyKey = "dup"
	if _, err := o.Enqueue(ctx, from, dup); err != nil {
		t.Fatal(err)
	}
	msgs := []cloudapi.Message{
		cloudapi.Text(recipient(1), "a"),
		cloudapi.Text("not a number", "b"),
		dup,
		cloudapi.Text(recipient(2), "c"),
		cloudapi.Text(recipient(2), "d"),
		cloudapi.Text(recipient(2), "e: the lane is full"),
	}
	res, err := o.EnqueueMany(ctx, from, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	var ve *cloudapi.ValidationError
	switch {
	case res[0].Err != nil || res[0].Ticket.State != outbox.StateQueued || res[0].Ticket.Existing:
		t.Errorf("a new message: %+v", res[0])
	case !errors.As(res[1].Err, &ve):
		t.Errorf("an invalid message: %+v", res[1])
	case res[2].Err != nil || !res[2].Ticket.Existing || res[2].Ticket.Key != "dup":
		t.Errorf("a stored key: %+v", res[2])
	case res[3].Err != nil || res[4].Err != nil:
		t.Errorf("the lane's first two: %+v %+v", res[3], res[4])
	case !errors.Is(res[5].Err, outbox.ErrQueueFull):
		t.Errorf("the lane's third: %+v", res[5])
	}
	if got := checkCounts(t, o); got[outbox.StateQueued] != 4 {
		t.Fatalf("queued %d, want 4", got[outbox.StateQueued])
	}
	meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1000), cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond))
	runDrain(t, o, newClient(t, meta, cloudapi.WithPairLimiter(pairlimit.New(fastPairs))))
	if got := checkCounts(t, o); got[outbox.StateAccepted] != 4 {
		t.Fatalf("accepted %d, want 4", got[outbox.StateAccepted])
	}
	if res, err := o.EnqueueMany(ctx, from); err != nil || len(res) != 0 {
		t.Fatalf("an empty batch: %v %v", res, err)
	}
}

// Three bubbles enqueued as one burst go back to back (Meta's pair rule
// allows a burst; sent one by one they would be 6 s apart), in order.
func TestEnqueueBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, _ := openSQLite(t)
		ctx := t.Context()
		var msgs []cloudapi.Message
		for i := range 3 {
			m := cloudapi.Text(recipient(1), fmt.Sprintf("bubble %d", i))
			m.IdempotencyKey = fmt.Sprintf("b%d", i)
			msgs = append(msgs, m)
		}
		before := cloudapi.Text(recipient(1), "before")
		before.IdempotencyKey = "before"
		if _, err := o.Enqueue(ctx, from, before); err != nil {
			t.Fatal(err)
		}
		ts, err := o.EnqueueBurst(ctx, from, msgs...)
		if err != nil || len(ts) != 3 || ts[2].Key != "b2" || ts[0].Existing {
			t.Fatalf("EnqueueBurst: %+v %v", ts, err)
		}
		again, err := o.EnqueueBurst(ctx, from, msgs...)
		if err != nil || !again[0].Existing || !again[2].Existing {
			t.Fatalf("the same burst again: %+v %v", again, err)
		}
		if _, err := o.EnqueueBurst(ctx, from, msgs[0], cloudapi.Text(recipient(3), "x")); err == nil {
			t.Fatal("a burst with a stored key and a new one was taken")
		}
		var ve *cloudapi.ValidationError
		if _, err := o.EnqueueBurst(ctx, from, cloudapi.Text(recipient(2), "x"), cloudapi.Text(recipient(3), "y")); !errors.As(err, &ve) {
			t.Fatalf("a burst to two recipients: %v", err)
		}
		if _, err := o.EnqueueBurst(ctx, from, make46()...); !errors.Is(err, pairlimit.ErrBurstTooLarge) {
			t.Fatalf("a burst of 46: %v", err)
		}
		if got := checkCounts(t, o); got[outbox.StateQueued] != 4 {
			t.Fatalf("queued %d, want 4 (rejected bursts store nothing)", got[outbox.StateQueued])
		}
		// "before" is sent first, then the pair owes 6 s: the burst goes after
		// it, as one burst, its three bubbles back to back.
		meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1000))
		runDrain(t, o, newClient(t, meta))
		var keys []string
		var at []time.Time
		for _, r := range meta.Requests() {
			if r.Accepted {
				keys, at = append(keys, r.CallbackData), append(at, r.At)
			}
		}
		if fmt.Sprint(keys) != "[before b0 b1 b2]" {
			t.Fatalf("sent %v", keys)
		}
		if d := at[3].Sub(at[1]); d > time.Second || at[1].Sub(at[0]) < 6*time.Second {
			t.Fatalf("the burst's bubbles spread over %v", d)
		}
		checkCounts(t, o)
	})
}

// A burst is rejected whole when one of its messages would be.
func TestEnqueueBurstAllOrNothing(t *testing.T) {
	o, _ := openSQLite(t, outbox.WithLaneCapacity(2))
	_, err := o.EnqueueBurst(t.Context(), from, cloudapi.Text(recipient(1), "a"), cloudapi.Text(recipient(1), "b"), cloudapi.Text(recipient(1), "c"))
	if !errors.Is(err, outbox.ErrQueueFull) {
		t.Fatalf("a burst of 3 into a lane of 2: %v", err)
	}
	if got := checkCounts(t, o); len(got) != 0 {
		t.Fatalf("stored %v", got)
	}
}

func make46() []cloudapi.Message {
	ms := make([]cloudapi.Message, 46)
	for i := range ms {
		ms[i] = cloudapi.Text(recipient(5), "x")
	}
	return ms
}

// Drain returns at once on an empty outbox, and with ctx's error when
// nothing dispatches.
func TestDrainWaits(t *testing.T) {
	o, _ := openSQLite(t)
	if err := o.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Enqueue(t.Context(), from, cloudapi.Text(recipient(1), "x")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := o.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain with nothing running: %v", err)
	}
	var zero outbox.Outbox
	if err := zero.Drain(t.Context()); !errors.Is(err, outbox.ErrClosed) {
		t.Fatalf("zero Outbox: %v", err)
	}
}

// A bubble Meta refuses for good fails, and the bubbles after it are not
// sent (no reply with a hole): they fail with it.
func TestEnqueueBurstCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, _ := openSQLite(t)
		var msgs []cloudapi.Message
		for i := range 3 {
			m := cloudapi.Text(recipient(1), fmt.Sprintf("bubble %d", i))
			m.IdempotencyKey = fmt.Sprintf("b%d", i)
			msgs = append(msgs, m)
		}
		if _, err := o.EnqueueBurst(t.Context(), from, msgs...); err != nil {
			t.Fatal(err)
		}
		meta := cloudapitest.NewServer(t)
		meta.Script(cloudapitest.Failure{To: recipient(1), Nth: 2, Code: errcodes.InvalidParameter})
		runDrain(t, o, newClient(t, meta))
		want := []outbox.State{outbox.StateAccepted, outbox.StateFailed, outbox.StateFailed}
		for i, st := range want {
			if it := mustGet(t, o, fmt.Sprintf("b%d", i)); it.State != st {
				t.Errorf("b%d: %v (%s), want %v", i, it.State, it.Reason, st)
			}
		}
		for _, r := range meta.Requests() {
			if r.CallbackData == "b2" {
				t.Error("b2 was sent after b1 failed")
			}
		}
		checkCounts(t, o)
	})
}

// A batch large enough for lookup to read its keys and lanes in two
// statements (lookupMany) decides each message as Enqueue would: stored
// keys (same message: the existing ticket; another: a conflict), the
// depth of lanes with live items, new lanes.
func TestEnqueueManyLookupBatch(t *testing.T) {
	o, _ := openSQLite(t, outbox.WithLaneCapacity(2))
	ctx := t.Context()
	keyed := func(to int, body, key string) cloudapi.Message {
		m := cloudapi.Text(recipient(to), body)
		m.IdempotencyKey = key
		return m
	}
	for i := range 4 {
		if _, err := o.Enqueue(ctx, from, keyed(i, "before", fmt.Sprint("k", i))); err != nil {
			t.Fatal(err)
		}
	}
	msgs := []cloudapi.Message{
		keyed(0, "before", "k0"),         // stored: its ticket
		keyed(1, "another", "k1"),        // stored for another message
		keyed(2, "second", "n2a"),        // lane 2's second
		keyed(2, "third: full", "n2b"),   // lane 2 is full
		keyed(3, "second", "n3"),         // lane 3's second
		keyed(10, "new lane", "n10a"),    // a new lane
		keyed(10, "new lane 2", "n10b"),  // its second
		keyed(10, "new lane: full", "x"), // its third
		keyed(11, "new lane", "n11"),
		keyed(11, "again", "n11"), // a key of this batch, another message
	}
	res, err := o.EnqueueMany(ctx, from, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res {
		switch {
		case errors.Is(r.Err, outbox.ErrIdempotencyConflict):
			got = append(got, "conflict")
		case errors.Is(r.Err, outbox.ErrQueueFull):
			got = append(got, "full")
		case r.Err != nil:
			got = append(got, r.Err.Error())
		case r.Ticket.Existing:
			got = append(got, "existing")
		default:
			got = append(got, "queued")
		}
	}
	if want := "[existing conflict queued full queued queued queued full queued conflict]"; fmt.Sprint(got) != want {
		t.Fatalf("results %v, want %s", got, want)
	}
	if got := checkCounts(t, o); got[outbox.StateQueued] != 4+5 {
		t.Fatalf("queued %d, want 9", got[outbox.StateQueued])
	}
}
