package outbox_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
)

func TestAdminSQLite(t *testing.T) {
	testAdmin(t, "sqlite:"+filepath.Join(t.TempDir(), "admin.db"))
}

func TestAdminPostgres(t *testing.T) {
	testAdmin(t, requirePostgres(t))
}

// testAdmin seeds an outbox through Run against the fake (one item failed
// for good, one with an unknown outcome, one accepted, two queued) and
// exercises the operator's reads and actions on it.
func testAdmin(t *testing.T, dsn string) {
	ctx := t.Context()
	const from = "106540352242922"
	meta := cloudapitest.NewServer(t)
	c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		t.Fatal(err)
	}
	o, err := outbox.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	enqueue := func(key, to string) {
		t.Helper()
		m := cloudapi.Text(to, "hello "+key)
		m.IdempotencyKey = key
		if _, err := o.Enqueue(ctx, from, m); err != nil {
			t.Fatal(err)
		}
	}
	meta.FailNextFor("+237690000001", errcodes.Code(131049))
	meta.FailNextFor("+237690000002", errcodes.Code(131000))
	enqueue("failed", "+237690000001")
	enqueue("unknown", "+237690000002")
	enqueue("ok", "+237690000003")
	final := func(keys ...string) func() bool {
		return func() bool {
			for _, k := range keys {
				it, err := o.Get(ctx, k)
				if err != nil || !it.State.Final() {
					return false
				}
			}
			return true
		}
	}
	runUntil(t, o, c, final("failed", "unknown", "ok"))
	enqueue("q1", "+237690000004")
	enqueue("q2", "+237690000004")

	keys := func(items []outbox.Item) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.Key+"="+it.State.String())
		}
		return out
	}
	dead, err := o.List(ctx, outbox.Query{States: []outbox.State{outbox.StateFailed, outbox.StateExpired, outbox.StateSubmittedUnknown}})
	if err != nil {
		t.Fatal(err)
	}
	got := keys(dead)
	if diff := cmp.Diff([]string{"failed=failed", "unknown=submitted_unknown"}, sorted(got)); diff != "" {
		t.Errorf("dead and unknown (-want +got):\n%s", diff)
	}
	for _, it := range dead {
		if it.Key == "failed" && (it.Code != 131049 || it.Reason == "") {
			t.Errorf("failed item %+v", it)
		}
	}
	if all, _ := o.List(ctx, outbox.Query{Limit: 2}); len(all) != 2 || all[0].Key != "q2" {
		t.Errorf("List(limit 2) = %v, want the latest change first", keys(all))
	}
	if lane, _ := o.List(ctx, outbox.Query{From: from, To: "237690000004"}); len(lane) != 2 {
		t.Errorf("lane's items %v", keys(lane))
	}

	lanes, err := o.DeepestLanes(ctx, 5)
	if err != nil || len(lanes) != 1 || lanes[0].To != "237690000004" || lanes[0].Live != 2 || lanes[0].From != from {
		t.Errorf("DeepestLanes = %+v, %v", lanes, err)
	}

	// Requeue: the failed item (never accepted) goes again under a new
	// key; the unknown one needs force.
	if _, err := o.Requeue(ctx, "failed", outbox.RequeueOptions{}); !errors.Is(err, outbox.ErrNoReason) {
		t.Errorf("requeue without a reason: %v", err)
	}
	if _, err := o.Requeue(ctx, "q1", outbox.RequeueOptions{Reason: "x"}); !errors.Is(err, outbox.ErrWrongState) {
		t.Errorf("requeue of a queued item: %v", err)
	}
	if _, err := o.Requeue(ctx, "unknown", outbox.RequeueOptions{Reason: "x"}); !errors.Is(err, outbox.ErrMayHaveBeenSent) {
		t.Errorf("requeue of an unknown outcome without force: %v", err)
	}
	if _, err := o.Requeue(ctx, "ok", outbox.RequeueOptions{Reason: "x"}); !errors.Is(err, outbox.ErrMayHaveBeenSent) {
		t.Errorf("requeue of an accepted item without force: %v", err)
	}
	if _, err := o.Requeue(ctx, "nope", outbox.RequeueOptions{Reason: "x"}); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("requeue of an unknown key: %v", err)
	}
	it, err := o.Requeue(ctx, "failed", outbox.RequeueOptions{Reason: "template fixed (ticket 42)"})
	if err != nil {
		t.Fatal(err)
	}
	last := it.History[len(it.History)-1]
	if it.State != outbox.StateQueued || last.State != outbox.StateQueued || last.Reason != "requeued by operator: template fixed (ticket 42)" || it.Resends != 1 {
		t.Errorf("requeued item %+v, last transition %+v", it, last)
	}
	it, err = o.Requeue(ctx, "unknown", outbox.RequeueOptions{Reason: "checked with Meta support", Force: true})
	if err != nil || !strings.Contains(it.History[len(it.History)-1].Reason, "forced") {
		t.Fatalf("forced requeue: %+v, %v", it, err)
	}

	// Expire: only a queued item.
	if _, err := o.Expire(ctx, "ok", "x"); !errors.Is(err, outbox.ErrWrongState) {
		t.Errorf("expire of an accepted item: %v", err)
	}
	if _, err := o.Expire(ctx, "q2", ""); !errors.Is(err, outbox.ErrNoReason) {
		t.Errorf("expire without a reason: %v", err)
	}
	it, err = o.Expire(ctx, "q2", "campaign cancelled")
	if err != nil || it.State != outbox.StateExpired || it.Reason != "expired by operator: campaign cancelled" {
		t.Fatalf("Expire = %+v, %v", it, err)
	}

	// The requeued ones are sent again, under resend keys.
	runUntil(t, o, c, final("failed", "unknown", "q1"))
	for _, k := range []string{"failed", "unknown"} {
		if it, _ := o.Get(ctx, k); it.State != outbox.StateAccepted {
			t.Errorf("%s after its requeue: %v %s", k, it.State, it.Reason)
		}
	}
	var resent int
	for _, r := range meta.Requests() {
		if r.CallbackData == "failed#r1" || r.CallbackData == "unknown#r1" {
			resent++
		}
	}
	if resent != 2 {
		t.Errorf("%d requests under resend keys, want 2", resent)
	}

	hist, err := o.LaneHistory(ctx, from, "237690000001", time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, e := range hist {
		s := e.State.String()
		if e.Code != 0 {
			s += "/" + string(rune('0'+e.Code%10))
		}
		states = append(states, s)
	}
	if diff := cmp.Diff([]string{"queued", "sending", "failed/9", "queued", "sending", "accepted"}, states); diff != "" {
		t.Errorf("lane history (-want +got):\n%s", diff)
	}

	trend, err := o.Trend(ctx, time.Now().Add(-time.Minute), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sum := map[outbox.State]int{}
	for _, p := range trend {
		for s, n := range p.Entered {
			sum[s] += n
		}
	}
	if sum[outbox.StateQueued] != 7 || sum[outbox.StateAccepted] != 4 || sum[outbox.StateExpired] != 1 {
		t.Errorf("trend sums %v", sum)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
