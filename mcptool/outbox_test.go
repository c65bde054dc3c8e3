package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/mcptool"
	"github.com/wapace/wapace/outbox"
)

const (
	from = "106540352242922"
	user = "+237 690 00 00 01"
)

// world is an MCP client connected in memory to a server with the tools,
// on a SQLite outbox dispatched by Run through a Client to the fake Meta.
type world struct {
	t    *testing.T
	cs   *mcp.ClientSession
	meta *cloudapitest.Server
	ob   *outbox.Outbox
}

func newWorld(t *testing.T, cfg mcptool.Config, opts ...outbox.Option) *world {
	t.Helper()
	dir := t.TempDir()
	w, stop := openWorld(t, dir, cfg, opts...)
	t.Cleanup(stop)
	return w
}

// openWorld builds a world in dir; stop ends everything it started.
func openWorld(t *testing.T, dir string, cfg mcptool.Config, opts ...outbox.Option) (*world, func()) {
	t.Helper()
	meta := cloudapitest.NewServer(nil)
	// One Client, the owner of the limits, given to the outbox and the
	// tools, and a Waker fed by the outbox.
	c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		t.Fatal(err)
	}
	wk := new(mcptool.Waker)
	ob, err := outbox.Open(t.Context(), "sqlite:"+filepath.Join(dir, "outbox.db"),
		append(opts, outbox.WithClient(c), outbox.WithObserver(wk.Observe))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ob.Run(ctx, c) }()

	s := mcp.NewServer(&mcp.Implementation{Name: "wapace", Version: "v0"}, nil)
	cfg.Outbox, cfg.From, cfg.Client, cfg.Waker = ob, []string{from}, c, wk
	if err := mcptool.Register(s, cfg); err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := func() {
		cs.Close()
		ss.Wait()
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
		ob.Close()
		meta.Close()
	}
	return &world{t: t, cs: cs, meta: meta, ob: ob}, stop
}

// call calls a tool; a protocol error fails the test.
func (w *world) call(name string, args map[string]any) (map[string]any, bool) {
	w.t.Helper()
	res, err := w.cs.CallTool(w.t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		w.t.Fatalf("%s: %v", name, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		w.t.Fatal(err)
	}
	w.checkOutput(name, m)
	return m, res.IsError
}

// checkOutput validates a result against the output schema the server
// lists for the tool, as clients do.
func (w *world) checkOutput(tool string, v map[string]any) {
	w.t.Helper()
	lt, err := w.cs.ListTools(w.t.Context(), nil)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, tl := range lt.Tools {
		if tl.Name != tool || tl.OutputSchema == nil {
			continue
		}
		raw, err := json.Marshal(tl.OutputSchema)
		if err != nil {
			w.t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			w.t.Fatal(err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			w.t.Fatal(err)
		}
		if err := r.Validate(v); err != nil {
			w.t.Errorf("%s result %v does not match its output schema: %v", tool, v, err)
		}
	}
}

func (w *world) send(args map[string]any) (map[string]any, bool) {
	w.t.Helper()
	return w.call(mcptool.SendToolName, args)
}

func (w *world) status(key string) map[string]any {
	w.t.Helper()
	m, isErr := w.call(mcptool.StatusToolName, map[string]any{"idempotency_key": key})
	if isErr {
		w.t.Fatalf("status %s: %v", key, m)
	}
	return m
}

// sentTimes counts the accepted requests that carried each key.
func (w *world) accepted() map[string]int {
	n := map[string]int{}
	for _, r := range w.meta.Requests() {
		if r.Accepted {
			n[r.CallbackData]++
		}
	}
	return n
}

// reached reports whether any request carried key.
func (w *world) reached(key string) bool {
	for _, r := range w.meta.Requests() {
		if r.CallbackData == key {
			return true
		}
	}
	return false
}

func text(key, body string, extra ...any) map[string]any {
	m := map[string]any{"to": user, "text": body, "idempotency_key": key}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func states(m map[string]any) []string {
	var s []string
	tr, _ := m["transitions"].([]any)
	for _, x := range tr {
		s = append(s, x.(map[string]any)["state"].(string))
	}
	return s
}

func TestAcceptedNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, mcptool.Config{})
		now := time.Now()
		got, isErr := w.send(text("a1", "Your order shipped"))
		reqs := w.meta.Requests()
		if isErr || len(reqs) != 1 {
			t.Fatalf("error %v, %d requests", got, len(reqs))
		}
		want := map[string]any{"status": "accepted", "message_id": reqs[0].MessageID, "operation_id": "a1",
			"idempotency_key": "a1", "expires_at": stamp(now.Add(mcptool.DefaultReplyTTL))}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		st := w.status("a1")
		if st["status"] != "accepted" || st["message_id"] != reqs[0].MessageID {
			t.Errorf("status %v", st)
		}
		if diff := cmp.Diff([]string{"queued", "sending", "accepted"}, states(st)); diff != "" {
			t.Errorf("transitions (-want +got):\n%s", diff)
		}
		// The same key again sends nothing and reports the same message.
		again, isErr := w.send(text("a1", "Your order shipped"))
		if isErr || again["status"] != "accepted" || again["message_id"] != reqs[0].MessageID || len(w.meta.Requests()) != 1 {
			t.Errorf("repeat: %v, %d requests", again, len(w.meta.Requests()))
		}
	})
}

// A burst to one user queues behind the pair rule; each queued message is
// later accepted exactly once, in order, and never refused for the pair.
func TestQueuedThenAcceptedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, mcptool.Config{})
		start := time.Now()
		keys := []string{"q1", "q2", "q3", "q4"}
		for i, k := range keys {
			got, isErr := w.send(text(k, fmt.Sprintf("Step %d", i+1), "max_delay_ms", 120_000))
			want := "queued"
			if i == 0 {
				want = "accepted"
			}
			if isErr || got["status"] != want {
				t.Fatalf("%s: %v, want %s", k, got, want)
			}
			if want == "queued" {
				if got["message_id"] != nil || got["retry_after_ms"] == nil || got["estimated_send_at"] == nil {
					t.Errorf("%s: a queued result must carry an estimate and no message_id: %v", k, got)
				}
				if st := w.status(k)["status"]; st != "queued" && st != "sending" {
					t.Errorf("%s: status %v right after queueing", k, st)
				}
			}
		}
		time.Sleep(time.Minute)
		var prev time.Time
		for _, k := range keys {
			st := w.status(k)
			if st["status"] != "accepted" {
				t.Fatalf("%s: %v", k, st)
			}
			if diff := cmp.Diff([]string{"queued", "sending", "accepted"}, states(st)); diff != "" {
				t.Errorf("%s transitions (-want +got):\n%s", k, diff)
			}
		}
		acc := w.accepted()
		for _, k := range keys {
			if acc[k] != 1 {
				t.Errorf("%s accepted %d times, want 1", k, acc[k])
			}
		}
		for _, r := range w.meta.Requests() {
			if r.At.Before(prev) {
				t.Errorf("requests out of order")
			}
			prev = r.At
		}
		if n := w.meta.Count(errcodes.PairRateLimit); n != 0 {
			t.Errorf("%d x 131056", n)
		}
		if last := w.meta.Requests()[len(keys)-1].At.Sub(start); last < 3*6*time.Second {
			t.Errorf("the fourth message went after %s: faster than the pair rule", last)
		}
	})
}

// Rejections never reach Meta, even after the queue has drained.
func TestRejectedNeverReachesMeta(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, mcptool.Config{SyncWait: 10 * time.Second}, outbox.WithLaneCapacity(3))
		for i, k := range []string{"r1", "r2", "r3"} {
			if got, isErr := w.send(text(k, fmt.Sprintf("Step %d", i+1), "max_delay_ms", 120_000)); isErr {
				t.Fatalf("%s: %v", k, got)
			}
		}
		type row struct {
			name string
			args map[string]any
			want map[string]any
		}
		now := time.Now()
		rows := []row{
			{"deadline too close for the lane", text("x-fresh", "Table for two at 8?", "max_delay_ms", 2000),
				map[string]any{"code": "WHATSAPP_BACKPRESSURE", "meta_code": 131056.0, "retryable": true,
					"expires_at": stamp(now.Add(2 * time.Second)), "send_state": "not_submitted", "idempotency_key": "x-fresh"}},
			{"one-time code cannot wait", map[string]any{"to": user, "idempotency_key": "x-otp", "max_delay_ms": 5000,
				"template": map[string]any{"name": "login_code", "language": "en", "code": "482913"}},
				map[string]any{"code": "WHATSAPP_BACKPRESSURE", "meta_code": 131056.0, "retryable": true,
					"expires_at": stamp(now.Add(5 * time.Second)), "send_state": "not_submitted", "idempotency_key": "x-otp"}},
			{"sync wait cannot be bounded", text("x-sync", "Hello", "delivery", "sync"),
				map[string]any{"code": "WHATSAPP_BACKPRESSURE", "meta_code": 131056.0, "retryable": true,
					"expires_at": stamp(now.Add(mcptool.DefaultReplyTTL)), "send_state": "not_submitted", "idempotency_key": "x-sync"}},
			{"already expired", text("x-late", "Hello", "expires_at", stamp(now.Add(-time.Minute))),
				map[string]any{"code": "WHATSAPP_MESSAGE_EXPIRED", "retryable": false,
					"expires_at": stamp(now.Add(-time.Minute)), "send_state": "not_submitted", "idempotency_key": "x-late"}},
			{"invalid message", text("x-bad", string(make([]rune, 4097))),
				map[string]any{"code": "WHATSAPP_INVALID_MESSAGE", "retryable": false,
					"expires_at": stamp(now.Add(mcptool.DefaultReplyTTL)), "send_state": "not_submitted", "idempotency_key": "x-bad"}},
		}
		for _, r := range rows {
			got, isErr := w.send(r.args)
			if !isErr {
				t.Errorf("%s: not an error: %v", r.name, got)
				continue
			}
			if r.want["code"] == "WHATSAPP_BACKPRESSURE" {
				if ra, _ := got["retry_after_ms"].(float64); ra < 1000 {
					t.Errorf("%s: retry_after_ms %v, want the lane's wait", r.name, got["retry_after_ms"])
				}
				delete(got, "retry_after_ms")
			}
			if diff := cmp.Diff(r.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", r.name, diff)
			}
		}
		// The lane is full now (r2, r3 queued and one more allowed).
		if got, isErr := w.send(text("r4", "Step 4", "max_delay_ms", 120_000)); isErr {
			t.Fatalf("r4: %v", got)
		}
		got, isErr := w.send(text("x-full", "Step 5", "max_delay_ms", 120_000))
		if !isErr || got["code"] != "WHATSAPP_QUEUE_FULL" || got["retryable"] != true || got["send_state"] != "not_submitted" {
			t.Errorf("full lane: %v", got)
		}
		time.Sleep(2 * time.Minute)
		for _, k := range []string{"x-fresh", "x-otp", "x-sync", "x-late", "x-bad", "x-full"} {
			if w.reached(k) {
				t.Errorf("rejected %s reached Meta", k)
			}
			if _, isErr := w.call(mcptool.StatusToolName, map[string]any{"idempotency_key": k}); !isErr {
				t.Errorf("rejected %s has a status", k)
			}
		}
		acc := w.accepted()
		for _, k := range []string{"r1", "r2", "r3", "r4"} {
			if acc[k] != 1 {
				t.Errorf("%s accepted %d times", k, acc[k])
			}
		}
	})
}

// A sync call that fits its wait returns accepted after the wait.
func TestSyncWaitsForTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, mcptool.Config{})
		if got, isErr := w.send(text("s1", "One")); isErr {
			t.Fatal(got)
		}
		start := time.Now()
		got, isErr := w.send(text("s2", "Two", "delivery", "sync"))
		if isErr || got["status"] != "accepted" || got["message_id"] == nil {
			t.Fatalf("%v", got)
		}
		if d := time.Since(start); d < 6*time.Second || d > mcptool.DefaultSyncWait {
			t.Errorf("sync call took %s, want the pair's 6 s", d)
		}
	})
}

// Meta's refusals and unknown outcomes reach the model as structured
// errors, and get_message_status reports how an unknown outcome settled.
func TestMetaOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, mcptool.Config{})
		exp := stamp(time.Now().Add(mcptool.DefaultReplyTTL))

		w.meta.FailNext(errcodes.ReEngagement)
		got, isErr := w.send(text("m-window", "Are you there?"))
		want := map[string]any{"code": "WHATSAPP_WINDOW_CLOSED", "meta_code": 131047.0, "retryable": false,
			"expires_at": exp, "send_state": "not_submitted", "idempotency_key": "m-window", "operation_id": "m-window"}
		if diff := cmp.Diff(want, got); !isErr || diff != "" {
			t.Errorf("window closed (-want +got):\n%s", diff)
		}
		if st := w.status("m-window"); st["status"] != "failed" || st["code"] != "WHATSAPP_WINDOW_CLOSED" {
			t.Errorf("status %v", st)
		}

		w.meta.Script(cloudapitest.Failure{To: "237690000002", Reset: true})
		exp = stamp(time.Now().Add(mcptool.DefaultReplyTTL))
		got, isErr = w.send(map[string]any{"to": "+237 690 00 00 02", "text": "Your code is ready", "idempotency_key": "m-reset"})
		want = map[string]any{"code": "WHATSAPP_OUTCOME_UNKNOWN", "retryable": false,
			"expires_at": exp, "send_state": "submitted_unknown", "idempotency_key": "m-reset", "operation_id": "m-reset"}
		if diff := cmp.Diff(want, got); !isErr || diff != "" {
			t.Errorf("reset (-want +got):\n%s", diff)
		}
		st := w.status("m-reset")
		if st["status"] != "submitted_unknown" || st["send_state"] != "submitted_unknown" {
			t.Errorf("status %v", st)
		}
		// The delivery report settles it; nothing was sent again.
		var req cloudapitest.Request
		for _, r := range w.meta.Requests() {
			if r.CallbackData == "m-reset" {
				req = r
			}
		}
		n, err := webhook.Parse(w.meta.StatusBody(cloudapitest.Delivered(req)))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.ob.Reconcile(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		st = w.status("m-reset")
		if st["status"] != "delivered" || st["message_id"] != req.MessageID {
			t.Errorf("after the webhook: %v", st)
		}
		if diff := cmp.Diff([]string{"queued", "sending", "submitted_unknown", "delivered"}, states(st)); diff != "" {
			t.Errorf("transitions (-want +got):\n%s", diff)
		}
		tr := st["transitions"].([]any)
		if reason, _ := tr[3].(map[string]any)["reason"].(string); reason == "" {
			t.Errorf("the delivered transition does not say how the unknown outcome was settled: %v", tr[3])
		}
		time.Sleep(time.Minute)
		reqs := 0
		for _, r := range w.meta.Requests() {
			if r.CallbackData == "m-reset" || r.CallbackData == "m-window" {
				reqs++
			}
		}
		if reqs != 2 {
			t.Errorf("%d requests for the two messages, want 2 (never resent)", reqs)
		}
	})
}

// With the outbox's service window, a free-form message to a user who has
// not written is refused before anything is spent; a template is not.
func TestServiceWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, mcptool.Config{}, outbox.WithServiceWindow(outbox.DefaultServiceWindow))
		got, isErr := w.send(text("w1", "Following up"))
		if !isErr || got["code"] != "WHATSAPP_WINDOW_CLOSED" || got["meta_code"] != 131047.0 || got["send_state"] != "not_submitted" {
			t.Errorf("free-form: %v", got)
		}
		got, isErr = w.send(map[string]any{"to": user, "idempotency_key": "w2",
			"template": map[string]any{"name": "order_update", "language": "en", "category": "utility", "parameters": []any{"A-17"}}})
		if isErr || got["status"] != "accepted" {
			t.Errorf("template: %v", got)
		}
		if len(w.meta.Requests()) != 1 || w.reached("w1") {
			t.Errorf("requests %+v", w.meta.Requests())
		}
	})
}

// After a five-bubble reply the pair owes 30 s: a one-time code valid for
// 20 s is refused at once, stored nowhere, while a utility template without
// a deadline is queued with an estimate that counts the debt.
func TestPairDebtDecidesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, mcptool.Config{})
		for i := range 5 {
			if got, isErr := w.send(text(fmt.Sprintf("bubble-%d", i), fmt.Sprintf("Step %d", i+1), "max_delay_ms", 600_000)); isErr {
				t.Fatal(got)
			}
		}
		time.Sleep(30 * time.Second) // the bubbles go one by one, 6 s apart
		if n := w.accepted(); len(n) != 5 {
			t.Fatalf("accepted %v", n)
		}
		// The fourth and fifth went at 18.75 s and 25 s: the pair owes until
		// about 31.25 s.
		now := time.Now()
		got, isErr := w.send(map[string]any{"to": user, "idempotency_key": "otp", "max_delay_ms": 1000,
			"template": map[string]any{"name": "login_code", "language": "en", "code": "482913"}})
		if !isErr || got["code"] != "WHATSAPP_BACKPRESSURE" || got["meta_code"] != 131056.0 || got["send_state"] != "not_submitted" ||
			got["expires_at"] != stamp(now.Add(time.Second)) {
			t.Errorf("one-time code: %v", got)
		}
		if _, isErr := w.call(mcptool.StatusToolName, map[string]any{"operation_id": "otp"}); !isErr {
			t.Error("the refused code was stored")
		}
		got, isErr = w.send(map[string]any{"to": user, "idempotency_key": "update",
			"template": map[string]any{"name": "order_update", "language": "en", "category": "utility"}})
		if isErr || got["status"] != "queued" {
			t.Fatalf("template: %v", got)
		}
		if ra := got["retry_after_ms"].(float64); ra < 1 {
			t.Errorf("retry_after_ms %v: the pair's debt is not counted", ra)
		}
		time.Sleep(time.Minute)
		if w.reached("otp") || w.accepted()["update"] != 1 {
			t.Errorf("requests %+v", w.meta.Requests())
		}
	})
}

// A call repeating an idempotency key with the same message reports the
// first message's state and sends nothing, whatever its deadline or
// delivery mode. Issue 23 item 6: one with another message (other content,
// another recipient) was answered with the first message's state, and
// the second recipient got nothing; it is refused, as not submitted.
func TestRepeatedKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, mcptool.Config{})
		w.send(text("k", "first"))
		got, isErr := w.send(text("k2", "second", "max_delay_ms", 600_000))
		if isErr || got["status"] != "queued" {
			t.Fatalf("%v", got)
		}
		again, isErr := w.send(text("k2", "second", "max_delay_ms", 1, "delivery", "sync"))
		if isErr || again["status"] != "queued" || again["operation_id"] != "k2" {
			t.Errorf("repeat of a queued key: %v", again)
		}
		for name, args := range map[string]map[string]any{
			"other content":   text("k2", "second, reworded"),
			"other recipient": {"to": "+237 690 00 00 02", "text": "second", "idempotency_key": "k2"},
		} {
			got, isErr := w.send(args)
			want := map[string]any{"code": "WHATSAPP_IDEMPOTENCY_CONFLICT", "send_state": "not_submitted",
				"idempotency_key": "k2", "retryable": false}
			for k := range got {
				if _, ok := want[k]; !ok && k != "expires_at" {
					want[k] = "(absent)"
				}
			}
			delete(got, "expires_at")
			if diff := cmp.Diff(want, got); !isErr || diff != "" {
				t.Errorf("%s: isError %v, result (-want +got):\n%s", name, isErr, diff)
			}
		}
		time.Sleep(time.Minute)
		again, isErr = w.send(text("k2", "second"))
		if isErr || again["status"] != "accepted" || again["message_id"] == nil {
			t.Errorf("repeat of an accepted key: %v", again)
		}
		if got, isErr := w.send(text("k2", "second, reworded")); !isErr || got["code"] != "WHATSAPP_IDEMPOTENCY_CONFLICT" {
			t.Errorf("other content for an accepted key: %v", got)
		}
		if n := len(w.meta.Requests()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
}

// Every kind of message the tool builds goes out: text to a BSUID, reply
// buttons, a template with parameters.
func TestMessageKinds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, mcptool.Config{})
		calls := []map[string]any{
			{"to": "CO.1949266959121697", "text": "Hola", "idempotency_key": "bsuid"},
			{"to": user, "idempotency_key": "buttons", "reply_to": "wamid.IN1",
				"buttons": map[string]any{"body": "Keep your 8 pm slot?", "buttons": []any{
					map[string]any{"id": "keep", "title": "Keep it"}, map[string]any{"id": "move", "title": "Move it"}}}},
			{"to": "+237 690 00 00 03", "idempotency_key": "template",
				"template": map[string]any{"name": "order_update", "language": "en_US", "category": "utility", "parameters": []any{"A-17", "Friday"}}},
		}
		for _, args := range calls {
			if got, isErr := w.send(args); isErr || got["status"] != "accepted" {
				t.Errorf("%s: %v", args["idempotency_key"], got)
			}
		}
		types := map[string]string{}
		for _, r := range w.meta.Requests() {
			types[r.CallbackData] = r.Type
		}
		want := map[string]string{"bsuid": "text", "buttons": "interactive", "template": "template"}
		if diff := cmp.Diff(want, types); diff != "" {
			t.Errorf("request types (-want +got):\n%s", diff)
		}
	})
}

// While Meta holds the business number for maintenance (131057), a message
// whose deadline falls inside the hold is refused at once, for any
// recipient, naming 131057 (the code that holds it, from the Client's
// admission query), and never reaches Meta.
func TestNumberHoldDecidesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, mcptool.Config{})
		w.meta.Maintenance(from, time.Now().Add(2*time.Minute))
		got, isErr := w.send(text("first", "Your order shipped", "max_delay_ms", 600_000))
		if isErr || got["status"] != "queued" {
			t.Fatalf("first: %v", got)
		}
		if w.meta.Count(errcodes.Maintenance) == 0 {
			t.Fatalf("Meta did not refuse for maintenance: %+v", w.meta.Requests())
		}
		now := time.Now()
		got, isErr = w.send(map[string]any{"to": "+237 690 00 00 09", "text": "Table for two at 8?", "idempotency_key": "other", "max_delay_ms": 5000})
		if !isErr || got["code"] != "WHATSAPP_BACKPRESSURE" || got["meta_code"] != 131057.0 || got["send_state"] != "not_submitted" ||
			got["expires_at"] != stamp(now.Add(5*time.Second)) {
			t.Errorf("during the hold: %v", got)
		}
		if ra, _ := got["retry_after_ms"].(float64); ra <= 5000 {
			t.Errorf("retry_after_ms %v, want the hold", got["retry_after_ms"])
		}
		time.Sleep(5 * time.Minute)
		if w.reached("other") {
			t.Error("the refused message reached Meta")
		}
		if w.accepted()["first"] != 1 {
			t.Errorf("first accepted %d times", w.accepted()["first"])
		}
	})
}

// Many agents calling at once, some repeating each other's keys: every key
// is stored once and accepted once, and the pair rule holds.
func TestConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, mcptool.Config{})
		var wg sync.WaitGroup
		results := make([]map[string]any, 40)
		errs := make([]bool, 40)
		for i := range 40 {
			wg.Go(func() {
				key := fmt.Sprintf("c%d", i%25) // 15 keys are sent twice
				res, err := w.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: mcptool.SendToolName, Arguments: map[string]any{
					"to": fmt.Sprintf("+237 690 00 00 0%d", i%25%3), "text": "hello " + key, "idempotency_key": key, "max_delay_ms": 3_600_000,
				}})
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := json.Marshal(res.StructuredContent)
				json.Unmarshal(b, &results[i])
				errs[i] = res.IsError
			})
		}
		wg.Wait()
		for i, r := range results {
			if errs[i] || (r["status"] != "accepted" && r["status"] != "queued") {
				t.Errorf("call %d: %v", i, r)
			}
		}
		time.Sleep(10 * time.Minute)
		acc := w.accepted()
		if len(acc) != 25 {
			t.Errorf("%d keys accepted, want 25", len(acc))
		}
		for k, n := range acc {
			if n != 1 {
				t.Errorf("%s accepted %d times", k, n)
			}
		}
		if n := w.meta.Count(errcodes.PairRateLimit); n != 0 {
			t.Errorf("%d x 131056", n)
		}
	})
}
