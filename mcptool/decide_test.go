package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeQueue is a queue whose answers a test scripts: enqueue's error or
// estimate, and what state an enqueued item moves to when read.
type fakeQueue struct {
	mu       sync.Mutex
	items    map[string]*item
	sent     []cloudapi.Message
	reject   error
	estimate time.Duration
	clk      clock.Clock
	// settle, when set, gives an item's state the first time it is read.
	settle func(*item)
	// advance moves the mock clock on the first read.
	advance time.Duration
}

func (q *fakeQueue) enqueue(_ context.Context, _ string, m cloudapi.Message) (ticket, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.reject != nil {
		return ticket{}, q.reject
	}
	if q.items == nil {
		q.items = map[string]*item{}
	}
	now := q.clk.Now()
	if it, ok := q.items[m.IdempotencyKey]; ok {
		return ticket{key: it.key, operationID: it.operationID, state: it.state, estimatedSendAt: now}, nil
	}
	q.sent = append(q.sent, m)
	it := &item{key: m.IdempotencyKey, operationID: m.IdempotencyKey, state: stateQueued, expiresAt: m.ExpiresAt,
		transitions: []Transition{{State: stateQueued, At: stamp(now)}}}
	q.items[it.key] = it
	return ticket{key: it.key, operationID: it.operationID, state: stateQueued, estimatedSendAt: now.Add(q.estimate)}, nil
}

func (q *fakeQueue) get(_ context.Context, id string) (item, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, ok := q.items[id]
	if !ok {
		return item{}, errNotFound
	}
	if q.settle != nil && it.state == stateQueued {
		q.settle(it)
	}
	if q.advance > 0 {
		q.clk.(*clock.Mock).Add(q.advance)
		q.advance = 0
	}
	return *it, nil
}

// connect starts the tools on a server and returns a connected client.
func connect(t *testing.T, q queue, clk clock.Clock, syncWait time.Duration) *mcp.ClientSession {
	t.Helper()
	tl := &tools{q: q, from: []string{"1001", "1002"}, clk: clk, syncWait: syncWait, acceptWait: syncWait, replyTTL: DefaultReplyTTL, poll: time.Millisecond}
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	if err := tl.register(s); err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0"}, nil)
	cs, err := c.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// call calls a tool and decodes its structured content into a map.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, *mcp.CallToolResult, error) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%d content blocks, want 1 summary", len(res.Content))
	}
	checkOutput(t, name, m)
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text == "" || strings.Contains(tc.Text, "\n") {
		t.Fatalf("summary %#v is not one line of text", res.Content[0])
	}
	return m, res, nil
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestDecisionTable(t *testing.T) {
	bp := &cloudapi.BackpressureError{Limit: errcodes.HoldPair, Code: errcodes.PairRateLimit, Wait: 24 * time.Second,
		ExpiresAt: t0.Add(10 * time.Second)}
	long := strings.Repeat("x", 4097)
	tests := []struct {
		name      string
		args      map[string]any
		reject    error
		estimate  time.Duration
		settle    func(*item)
		advance   time.Duration
		wantError bool
		want      map[string]any
		wantSent  int
	}{
		{
			name:   "accepted",
			args:   map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k1"},
			settle: func(it *item) { it.state, it.messageID = stateAccepted, "wamid.1" },
			want: map[string]any{"status": "accepted", "message_id": "wamid.1", "operation_id": "k1", "idempotency_key": "k1",
				"expires_at": stamp(t0.Add(DefaultReplyTTL))},
			wantSent: 1,
		},
		{
			name:     "queued when async and the estimate is later",
			args:     map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k2", "max_delay_ms": 60000},
			estimate: 30 * time.Second,
			want: map[string]any{"status": "queued", "operation_id": "k2", "idempotency_key": "k2",
				"estimated_send_at": stamp(t0.Add(30 * time.Second)), "retry_after_ms": 30000.0, "expires_at": stamp(t0.Add(time.Minute))},
			wantSent: 1,
		},
		{
			name:      "backpressure when the wait passes the deadline",
			args:      map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k3", "max_delay_ms": 10000},
			reject:    fmt.Errorf("%w: %w", errExpired, bp),
			wantError: true,
			want: map[string]any{"code": CodeBackpressure, "meta_code": 131056.0, "retryable": true, "retry_after_ms": 24000.0,
				"expires_at": stamp(t0.Add(10 * time.Second)), "send_state": "not_submitted", "idempotency_key": "k3"},
		},
		{
			name:      "queue full",
			args:      map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k4", "expires_at": stamp(t0.Add(time.Hour))},
			reject:    fmt.Errorf("%w: %w", errQueueFull, &cloudapi.BackpressureError{Wait: time.Second}),
			wantError: true,
			want: map[string]any{"code": CodeQueueFull, "retryable": true, "retry_after_ms": 1000.0,
				"expires_at": stamp(t0.Add(time.Hour)), "send_state": "not_submitted", "idempotency_key": "k4"},
		},
		{
			name:      "expired before the call",
			args:      map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k5", "expires_at": stamp(t0.Add(-time.Second))},
			wantError: true,
			want: map[string]any{"code": CodeMessageExpired, "retryable": false,
				"expires_at": stamp(t0.Add(-time.Second)), "send_state": "not_submitted", "idempotency_key": "k5"},
		},
		{
			name:      "invalid message",
			args:      map[string]any{"to": "+237690000001", "text": long, "idempotency_key": "k6", "max_delay_ms": 0},
			wantError: true,
			want: map[string]any{"code": CodeInvalidMessage, "retryable": false,
				"expires_at": stamp(t0), "send_state": "not_submitted", "idempotency_key": "k6"},
		},
		{
			name:      "window closed",
			args:      map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k7"},
			settle:    func(it *item) { it.state, it.code = stateFailed, errcodes.ReEngagement },
			wantError: true,
			want: map[string]any{"code": CodeWindowClosed, "meta_code": 131047.0, "retryable": false,
				"expires_at": stamp(t0.Add(DefaultReplyTTL)), "send_state": "not_submitted", "idempotency_key": "k7", "operation_id": "k7"},
			wantSent: 1,
		},
		{
			name:      "outcome unknown",
			args:      map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k8"},
			settle:    func(it *item) { it.state = stateSubmittedUnknown },
			wantError: true,
			want: map[string]any{"code": CodeOutcomeUnknown, "retryable": false,
				"expires_at": stamp(t0.Add(DefaultReplyTTL)), "send_state": "submitted_unknown", "idempotency_key": "k8", "operation_id": "k8"},
			wantSent: 1,
		},
		{
			name: "undeliverable",
			args: map[string]any{"to": "+237690000001", "template": map[string]any{"name": "promo", "language": "en_US", "category": "marketing"},
				"idempotency_key": "k9"},
			settle:    func(it *item) { it.state, it.code = stateFailed, errcodes.MarketingStopped },
			wantError: true,
			want: map[string]any{"code": CodeNotDeliverable, "meta_code": 131050.0, "retryable": false,
				"send_state": "not_submitted", "idempotency_key": "k9", "operation_id": "k9"},
			wantSent: 1,
		},
		{
			name:      "sync wait ends while queued",
			args:      map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k10", "delivery": "sync"},
			estimate:  time.Minute,
			wantError: true,
			want: map[string]any{"code": CodeBackpressure, "retryable": true,
				"expires_at": stamp(t0.Add(DefaultReplyTTL)), "send_state": "not_submitted", "idempotency_key": "k10", "operation_id": "k10"},
			wantSent: 1,
		},
		{
			name:      "sync wait ends while sending",
			args:      map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k11", "delivery": "sync"},
			settle:    func(it *item) { it.state = stateSending },
			wantError: true,
			want: map[string]any{"code": CodeOutcomeUnknown, "retryable": false,
				"expires_at": stamp(t0.Add(DefaultReplyTTL)), "send_state": "submitted_unknown", "idempotency_key": "k11", "operation_id": "k11"},
			wantSent: 1,
		},
		{
			// Read queued before its deadline, which passed during the
			// read: it may still have gone right after the read, so it is
			// reported queued, not expired (see
			// TestSyncWaitEndJudgesByTheInstantBeforeTheRead).
			name:    "deadline passes during the read",
			args:    map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k13", "max_delay_ms": 500},
			advance: time.Second,
			want: map[string]any{"status": "queued", "estimated_send_at": stamp(t0), "retry_after_ms": 0.0,
				"expires_at": stamp(t0.Add(500 * time.Millisecond)), "idempotency_key": "k13", "operation_id": "k13"},
			wantSent: 1,
		},
		{
			name:      "expired while waiting",
			args:      map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k12"},
			settle:    func(it *item) { it.state = stateExpired },
			wantError: true,
			want: map[string]any{"code": CodeMessageExpired, "retryable": false,
				"expires_at": stamp(t0.Add(DefaultReplyTTL)), "send_state": "not_submitted", "idempotency_key": "k12", "operation_id": "k12"},
			wantSent: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewMock()
			clk.Set(t0)
			q := &fakeQueue{clk: clk, reject: tt.reject, estimate: tt.estimate, settle: tt.settle, advance: tt.advance}
			// A zero sync wait: the call reads the outbox once and decides.
			cs := connect(t, q, clk, 0)
			got, res, err := call(t, cs, SendToolName, tt.args)
			if err != nil {
				t.Fatalf("protocol error %v, want a tool result", err)
			}
			if res.IsError != tt.wantError {
				t.Errorf("isError = %v, want %v (%v)", res.IsError, tt.wantError, got)
			}
			if tt.wantError {
				// These error fields are always there; meta_code and
				// retry_after_ms only when they mean something (issue 23
				// item 13: an invalid message carried meta_code 0 and
				// retry_after_ms 0).
				for _, f := range []string{"code", "retryable", "send_state"} {
					if _, ok := got[f]; !ok {
						t.Errorf("error result lacks %s: %v", f, got)
					}
				}
				if v, ok := got["meta_code"]; ok && v == 0.0 {
					t.Errorf("error result has meta_code 0: %v", got)
				}
				if v, ok := got["retry_after_ms"]; ok && v == 0.0 {
					t.Errorf("error result has retry_after_ms 0: %v", got)
				}
				delete(got, "retry_after_ms")
				if w, ok := tt.want["retry_after_ms"]; ok {
					got["retry_after_ms"] = w
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("structured content (-want +got):\n%s", diff)
			}
			if len(q.sent) != tt.wantSent {
				t.Errorf("%d messages reached the outbox, want %d", len(q.sent), tt.wantSent)
			}
			checkSchema(t, cs, SendToolName, got)
		})
	}
}

// checkSchema validates a structured result against the tool's advertised
// output schema.
func checkSchema(t *testing.T, cs *mcp.ClientSession, name string, v map[string]any) {
	t.Helper()
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range lt.Tools {
		if tool.Name != name {
			continue
		}
		b, _ := json.Marshal(tool.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Validate(v); err != nil {
			t.Errorf("result does not match the output schema: %v", err)
		}
		return
	}
	t.Fatalf("no tool %s", name)
}

func TestMalformedArgumentsAreProtocolErrors(t *testing.T) {
	tests := []struct {
		name string
		args map[string]any
	}{
		{"no recipient", map[string]any{"text": "hi"}},
		{"empty recipient", map[string]any{"to": "", "text": "hi"}},
		{"recipient not a string", map[string]any{"to": 237690000001, "text": "hi"}},
		{"no content", map[string]any{"to": "+237690000001"}},
		{"two contents", map[string]any{"to": "+237690000001", "text": "hi", "template": map[string]any{"name": "a", "language": "en"}}},
		{"unknown field", map[string]any{"to": "+237690000001", "text": "hi", "urgent": true}},
		{"bad delivery", map[string]any{"to": "+237690000001", "text": "hi", "delivery": "later"}},
		{"both deadlines", map[string]any{"to": "+237690000001", "text": "hi", "max_delay_ms": 1000, "expires_at": stamp(t0)}},
		{"negative delay", map[string]any{"to": "+237690000001", "text": "hi", "max_delay_ms": -1}},
		{"delay not a number", map[string]any{"to": "+237690000001", "text": "hi", "max_delay_ms": "soon"}},
		{"delay not whole", map[string]any{"to": "+237690000001", "text": "hi", "max_delay_ms": 1.5}},
		{"delay beyond a year", map[string]any{"to": "+237690000001", "text": "hi", "max_delay_ms": 1e12}},
		{"bad expires_at", map[string]any{"to": "+237690000001", "text": "hi", "expires_at": "tomorrow"}},
		{"sender not allowed", map[string]any{"to": "+237690000001", "text": "hi", "from": "9999"}},
		{"template without name", map[string]any{"to": "+237690000001", "template": map[string]any{"language": "en"}}},
		{"bad category", map[string]any{"to": "+237690000001", "template": map[string]any{"name": "a", "language": "en", "category": "spam"}}},
	}
	clk := clock.NewMock()
	clk.Set(t0)
	q := &fakeQueue{clk: clk}
	cs := connect(t, q, clk, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: SendToolName, Arguments: tt.args})
			var we *jsonrpc.Error
			if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("got result %+v, error %v; want an invalid-params protocol error", res, err)
			}
			if strings.Contains(we.Message, "237690000001") || strings.Contains(we.Message, "690000001") {
				t.Errorf("the error quotes a phone number: %s", we.Message)
			}
		})
	}
	for _, args := range []map[string]any{{}, {"operation_id": 5}} {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: StatusToolName, Arguments: args})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("status %v: error %v, want invalid params", args, err)
		}
	}
	if len(q.sent) != 0 {
		t.Errorf("%d malformed calls reached the outbox", len(q.sent))
	}
}

func TestConfig(t *testing.T) {
	bad := []Config{
		{},
		{From: []string{""}},
		{From: []string{"1001", "1001"}},
		{From: []string{"+237 690 00 00 01"}},
		{From: []string{"1001"}, SyncWait: -time.Second},
		{From: []string{"1001"}, SyncWait: MaxSyncWait + time.Second},
		{From: []string{"1001"}, AcceptWait: time.Hour},
		{From: []string{"1001"}, PollInterval: -1},
	}
	for _, cfg := range bad {
		if _, err := newTools(&fakeQueue{}, cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: error %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if err := Register(mcp.NewServer(&mcp.Implementation{Name: "x", Version: "v0"}, nil), Config{From: []string{"1001"}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("no outbox: %v", err)
	}
	tl, err := newTools(&fakeQueue{}, Config{From: []string{"1001"}})
	if err != nil {
		t.Fatal(err)
	}
	if tl.syncWait != DefaultSyncWait || tl.acceptWait != DefaultAcceptWait || tl.replyTTL != DefaultReplyTTL || tl.poll != DefaultPollInterval || tl.clk == nil {
		t.Errorf("defaults not applied: %+v", tl)
	}
}

// A client that writes every number with a point (5000.0) is understood.
func TestWholeNumberWithPoint(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(t0)
	q := &fakeQueue{clk: clk, estimate: time.Minute}
	cs := connect(t, q, clk, 0)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: SendToolName,
		Arguments: json.RawMessage(`{"to":"+237690000001","text":"hi","idempotency_key":"p","max_delay_ms":120000.0}`)})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	if len(q.sent) != 1 || !q.sent[0].ExpiresAt.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("stored %+v", q.sent)
	}
}

func TestWaker(t *testing.T) {
	var w Waker // the zero value is ready
	w.Observe(outbox.Event{Key: "nobody"})
	a, stopA := w.watch("k")
	b, stopB := w.watch("k")
	other, stopOther := w.watch("other")
	defer stopOther()
	w.Observe(outbox.Event{Key: "k"})
	w.Observe(outbox.Event{Key: "k"}) // never blocks on a full channel
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		default:
			t.Error("a watcher was not woken")
		}
	}
	select {
	case <-other:
		t.Error("a watcher of another key was woken")
	default:
	}
	stopA()
	stopB()
	if _, ok := w.waiting["k"]; ok {
		t.Error("stopped watchers are still registered")
	}
	var nilWaker *Waker
	ch, stop := nilWaker.watch("k")
	stop()
	if ch != nil {
		t.Error("a nil Waker returned a channel")
	}
}

// checkOutput validates a tool's structured content against the tool's
// output schema, as clients (the Node SDK, the inspector) do.
func checkOutput(t *testing.T, tool string, v map[string]any) {
	t.Helper()
	var s *jsonschema.Schema
	var err error
	switch tool {
	case SendToolName:
		s, err = jsonschema.For[SendResult](nil)
		SendResult{}.tweakSchema(s)
	case StatusToolName:
		s, err = jsonschema.For[StatusResult](nil)
		StatusResult{}.tweakSchema(s)
	default:
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(v); err != nil {
		t.Errorf("%s result %v does not match its output schema: %v", tool, v, err)
	}
}
