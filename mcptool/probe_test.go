package mcptool

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

// interleaving is a shared pair store (as redisstore is across processes)
// in which another caller reserves the same pair right after the first
// reservation, and gives its slot back right after that reservation is
// cancelled: the interleaving of two concurrent probes.
type interleaving struct {
	pairstore.Store
	mu      sync.Mutex
	armed   bool
	pending bool
	pair    pairstore.Pair
	other   pairstore.Ticket
}

func (s *interleaving) Reserve(ctx context.Context, p pairstore.Pair, t time.Time, cost, maxWait time.Duration) (pairstore.Ticket, bool, error) {
	tk, ok, err := s.Store.Reserve(ctx, p, t, cost, maxWait)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.armed {
		s.armed = false
		s.other, _, _ = s.Store.Reserve(ctx, p, t, cost, maxWait)
		s.pair, s.pending = p, true
	}
	return tk, ok, err
}

func (s *interleaving) Cancel(ctx context.Context, p pairstore.Pair, t time.Time, tk pairstore.Ticket) (bool, error) {
	ok, err := s.Store.Cancel(ctx, p, t, tk)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending {
		s.pending = false
		_, _ = s.Store.Cancel(ctx, s.pair, t, s.other)
	}
	return ok, err
}

// Looking up a pair's known wait must not spend anything, even when
// another caller probes the same pair at the same time: a probe by
// reservation left a phantom slot (6 s of debt) behind.
func TestKnownWaitSpendsNothing(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	store := &interleaving{Store: pairlimit.NewMemoryStore(clk), armed: true}
	pol := pairlimit.Policy{Interval: 6 * time.Second, Burst: 1, BurstWindow: 6 * time.Second}
	pairs := pairlimit.New(pol, pairlimit.WithStore(store), pairlimit.WithClock(clk))
	c, err := cloudapi.New("TOKEN", cloudapi.WithClock(clk), cloudapi.WithPairLimiter(pairs))
	if err != nil {
		t.Fatal(err)
	}
	tl := &tools{clk: clk, client: c}
	m := cloudapi.Text("+237690000001", "hi")
	now := clk.Now()
	if w := tl.knownWait(now, "1001", m); w.Wait != 0 {
		t.Fatalf("known wait %v on a fresh pair", w.Wait)
	}
	p, err := pairlimit.NewPair("1001", m.To())
	if err != nil {
		t.Fatal(err)
	}
	if at, err := pairs.ReadyAt(now, p, 1); err != nil || !at.Equal(now) {
		t.Fatalf("after the lookup the pair is ready at %v (%v), want now: the lookup spent a slot", at.Sub(now), err)
	}
}

// A delivery sync call whose wait ends must judge the state it read by
// the instant before the read: a message still queued at a read that began
// before the wait's end may be claimed and sent right after it, so it
// cannot be reported "not_submitted, will be dropped unsent" (the model
// would retry with a new key and the user get it twice).
func TestSyncWaitEndJudgesByTheInstantBeforeTheRead(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(t0)
	reads := 0
	q := &fakeQueue{clk: clk, advance: 11 * time.Second, settle: func(it *item) {
		// The first read (begun before the wait's end) sees it queued;
		// Run claims and sends it right after.
		reads++
		if reads > 1 {
			it.state, it.messageID = stateAccepted, "wamid.1"
		}
	}}
	cs := connect(t, q, clk, 10*time.Second)
	got, res, err := call(t, cs, SendToolName, map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k1", "delivery": "sync"})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError && got["send_state"] == "not_submitted" {
		t.Fatalf("reported not sent (%v) although the message was sent after the read", got)
	}
}

// A message read queued after its deadline passed, while an async call
// waited for it, is reported expired: the outbox will drop it unsent.
func TestDeadlinePassesWhileQueued(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(t0)
	q := &fakeQueue{clk: clk, advance: time.Second}
	cs := connect(t, q, clk, 2*time.Second)
	got, res, err := call(t, cs, SendToolName, map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k13", "max_delay_ms": 500})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || got["code"] != CodeMessageExpired || got["send_state"] != "not_submitted" || got["retryable"] != false {
		t.Fatalf("got %v, want WHATSAPP_MESSAGE_EXPIRED, not_submitted", got)
	}
}

// failingReads is a queue that stores messages but cannot read them back.
type failingReads struct{ *fakeQueue }

func (q failingReads) get(ctx context.Context, id string) (item, error) {
	q.mu.Lock()
	n := len(q.sent)
	q.mu.Unlock()
	if n == 0 {
		return q.fakeQueue.get(ctx, id) // the repeated-key lookup: not found
	}
	return item{}, errors.New("database is locked")
}

// A message stored in the outbox whose state then cannot be read is
// queued: Run will send it. Reporting it not_submitted ("not sent: safe
// to send again") invites a second send under a new key.
func TestUnreadableAfterEnqueueIsQueued(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(t0)
	q := failingReads{&fakeQueue{clk: clk}}
	cs := connect(t, q, clk, 0)
	got, res, err := call(t, cs, SendToolName, map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.sent) != 1 {
		t.Fatalf("%d messages stored", len(q.sent))
	}
	if res.IsError && got["send_state"] != "queued" {
		t.Fatalf("stored message reported %v", got)
	}
}

// A message in flight when an async call stops waiting is not described as
// "not sent yet": it may already have been accepted.
func TestInFlightIsNotDescribedUnsent(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(t0)
	q := &fakeQueue{clk: clk, settle: func(it *item) { it.state = stateSending }}
	cs := connect(t, q, clk, 0)
	got, res, err := call(t, cs, SendToolName, map[string]any{"to": "+237690000001", "text": "hi", "idempotency_key": "k1"})
	if err != nil {
		t.Fatal(err)
	}
	summary := res.Content[0].(*mcp.TextContent).Text
	if strings.Contains(summary, "not sent") {
		t.Fatalf("in-flight message described as %q (%v)", summary, got)
	}
}
