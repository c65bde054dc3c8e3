package cloudapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/throughput"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	secretToken = "EAAGsecretTOKENvalue1234567890abcdefXYZ"
	number      = "106540352242922"
	alice       = "+237 690 00 00 01"
	bob         = "+237 690 00 00 02"
)

// harness is a Client wired to a fake Meta, logging to a buffer.
type harness struct {
	srv  *cloudapitest.Server
	c    *cloudapi.Client
	logs *bytes.Buffer
	mu   sync.Mutex
	evs  []cloudapi.Event
}

func newHarness(t *testing.T, srvOpts []cloudapitest.Option, opts ...cloudapi.Option) *harness {
	t.Helper()
	h := &harness{logs: &bytes.Buffer{}}
	// An upgraded number, so that the pair rule, not the number's bucket,
	// sets the instants these tests check; tests of throughput override it.
	h.srv = cloudapitest.NewServer(t, append([]cloudapitest.Option{cloudapitest.WithToken(secretToken), cloudapitest.WithThroughput(throughput.Upgraded)}, srvOpts...)...)
	base := []cloudapi.Option{
		cloudapi.WithThroughput(throughput.Upgraded),
		cloudapi.WithHTTPClient(h.srv.Client()),
		cloudapi.WithBaseURL(cloudapitest.BaseURL),
		cloudapi.WithLogger(slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		cloudapi.WithObserver(func(e cloudapi.Event) { h.mu.Lock(); h.evs = append(h.evs, e); h.mu.Unlock() }),
	}
	c, err := cloudapi.New(secretToken, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	t.Cleanup(func() {
		if strings.Contains(h.logs.String(), secretToken) {
			t.Error("the access token appears in the logs")
		}
		for _, e := range h.events() {
			if e.Err != nil && strings.Contains(e.Err.Error(), secretToken) {
				t.Error("the access token appears in an event's error")
			}
		}
	})
	return h
}

func (h *harness) events() []cloudapi.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]cloudapi.Event(nil), h.evs...)
}

// accepted returns the offsets from start at which the server accepted
// messages to recipient (digits).
func (h *harness) accepted(start time.Time, to string) []time.Duration {
	var out []time.Duration
	for _, r := range h.srv.Requests() {
		if r.Accepted && r.To == to {
			out = append(out, r.At.Sub(start))
		}
	}
	return out
}

func noToken(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), secretToken) {
		t.Errorf("error %q contains the access token", err)
	}
}

func TestBurstThenFourthMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		start := time.Now()
		rs, err := h.c.SendBurst(t.Context(), number, cloudapi.Text(alice, "1/3"), cloudapi.Text(alice, "2/3"), cloudapi.Text(alice, "3/3"))
		if err != nil || len(rs) != 3 {
			t.Fatalf("SendBurst = %v, %v", rs, err)
		}
		res, err := h.c.Send(t.Context(), number, cloudapi.Text(alice, "and one more"))
		if err != nil {
			t.Fatalf("4th message: %v", err)
		}
		want := []time.Duration{0, 0, 0, 18*time.Second + pairlimit.DefaultMargin}
		if diff := cmp.Diff(want, h.accepted(start, "237690000001")); diff != "" {
			t.Errorf("accepted at (-want +got):\n%s", diff)
		}
		if n := h.srv.Count(errcodes.PairRateLimit); n != 0 {
			t.Errorf("%d 131056 answers", n)
		}
		if res.MessageID == "" || res.WaID != "237690000001" || res.Attempts != 1 || !res.SentAt.Equal(start.Add(want[3])) || res.IdempotencyKey == "" {
			t.Errorf("result %+v", res)
		}
	})
}

func TestPairRefusalRetriesOnlyThatPair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		start := time.Now()
		// Another process spent alice's quota: Meta refuses her next three.
		for range 3 {
			h.srv.FailNextFor(alice, errcodes.PairRateLimit)
		}
		var wg sync.WaitGroup
		var aliceErr error
		wg.Go(func() { _, aliceErr = h.c.Send(t.Context(), number, cloudapi.Text(alice, "hello")) })
		// Bob gets a message every 2 s meanwhile (each a fresh pair).
		var bobAt []time.Duration
		for i := range 12 {
			to := fmt.Sprintf("+2376910000%02d", i)
			if _, err := h.c.Send(t.Context(), number, cloudapi.Text(to, "hi")); err != nil {
				t.Fatal(err)
			}
			bobAt = append(bobAt, time.Since(start))
			time.Sleep(2 * time.Second)
		}
		wg.Wait()
		if aliceErr != nil {
			t.Fatalf("alice: %v", aliceErr)
		}
		var aliceAttempts []time.Duration
		for _, r := range h.srv.Requests() {
			if r.To == "237690000001" {
				aliceAttempts = append(aliceAttempts, r.At.Sub(start))
			}
		}
		s := time.Second
		if diff := cmp.Diff([]time.Duration{0, 1 * s, 5 * s, 21 * s}, aliceAttempts); diff != "" {
			t.Errorf("alice's attempts (-want +got):\n%s", diff)
		}
		for i, at := range bobAt {
			if want := time.Duration(i) * 2 * s; at != want {
				t.Errorf("other recipient %d sent at +%v, want +%v (unslowed)", i, at, want)
			}
		}
	})
}

func TestThroughputRefusalHoldsOnlyThatNumber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		const other = "106540352242923"
		start := time.Now()
		h.srv.FailNext(errcodes.ThroughputLimit)
		res, err := h.c.Send(t.Context(), number, cloudapi.Text(alice, "a"))
		if err != nil || res.Attempts != 2 || res.SentAt.Sub(start) != time.Second {
			t.Fatalf("Send = %+v, %v; want accepted on the 2nd attempt at +1s", res, err)
		}
		if !h.c.Number(number).HeldUntil().Equal(start.Add(time.Second)) {
			t.Errorf("number held until %v", h.c.Number(number).HeldUntil())
		}
		if !h.c.Number(other).HeldUntil().IsZero() {
			t.Error("the other number was held")
		}
		res, err = h.c.Send(t.Context(), other, cloudapi.Text(bob, "b"))
		if err != nil || !res.SentAt.Equal(start.Add(time.Second)) {
			t.Errorf("other number: %+v %v", res, err)
		}
	})
}

func TestMaintenanceIsWaitedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		start := time.Now()
		h.srv.Maintenance(number, start.Add(25*time.Second))
		res, err := h.c.Send(t.Context(), number, cloudapi.Text(alice, "a"))
		// Polls at 0, +10 s, +30 s (10 s then 20 s holds).
		if err != nil || res.Attempts != 3 || res.SentAt.Sub(start) != 30*time.Second {
			t.Fatalf("Send = %+v, %v", res, err)
		}
		if n := h.srv.Count(errcodes.Maintenance); n != 2 {
			t.Errorf("%d 131057 answers, want 2", n)
		}
	})
}

func TestMarketingLimitIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.srv.FailNext(errcodes.MarketingLimit)
		_, err := h.c.Send(t.Context(), number, cloudapi.Template(alice, "spring_sale", "en_US"))
		var se *cloudapi.SendError
		if !errors.As(err, &se) || se.State != cloudapi.StateFailed || !errors.Is(err, errcodes.MarketingLimit) || se.Attempts != 1 {
			t.Fatalf("Send = %v, want a failed SendError for 131049 after 1 attempt", err)
		}
		var ge *errcodes.Error
		if !errors.As(err, &ge) || ge.Class().Wait != 24*time.Hour {
			t.Errorf("the 24 h hint is not reachable: %v", ge)
		}
		if n := len(h.srv.Requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
		noToken(t, err)
	})
}

func TestResetAfterReadIsUnknownAndNotResent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.srv.Script(cloudapitest.Failure{Reset: true})
		m := cloudapi.Text(alice, "exactly once")
		m.IdempotencyKey = "order-42"
		_, err := h.c.Send(t.Context(), number, m)
		var se *cloudapi.SendError
		if !errors.Is(err, cloudapi.ErrSubmittedUnknown) || !errors.As(err, &se) || se.IdempotencyKey != "order-42" {
			t.Fatalf("Send = %v, want ErrSubmittedUnknown with the key", err)
		}
		if cloudapi.StateOf(err) != cloudapi.StateSubmittedUnknown {
			t.Errorf("StateOf = %v", cloudapi.StateOf(err))
		}
		reqs := h.srv.Requests()
		if len(reqs) != 1 || reqs[0].CallbackData != "order-42" {
			t.Fatalf("requests = %+v, want exactly one carrying the key", reqs)
		}
		noToken(t, err)
	})
}

func TestUnknownOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    cloudapitest.Failure
	}{
		{"5xx from a proxy", cloudapitest.Failure{Status: 502}},
		{"timeout", cloudapitest.Failure{Hang: true}},
		{"131000", cloudapitest.Failure{Code: errcodes.SomethingWentWrong, Status: 500}},
		{"131016", cloudapitest.Failure{Code: errcodes.ServiceUnavailable, Status: 503}},
		{"code 2", cloudapitest.Failure{Code: errcodes.APIService}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil)
				h.srv.Script(tc.f)
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				_, err := h.c.Send(ctx, number, cloudapi.Text(alice, "x"))
				if !errors.Is(err, cloudapi.ErrSubmittedUnknown) {
					t.Fatalf("Send = %v, want ErrSubmittedUnknown", err)
				}
				if n := len(h.srv.Requests()); n != 1 {
					t.Errorf("%d requests, want 1 (never resent)", n)
				}
				noToken(t, err)
			})
		})
	}
}

func TestExpiredMessageIsRejectedWithoutRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		if _, err := h.c.SendBurst(t.Context(), number, cloudapi.Text(alice, "1"), cloudapi.Text(alice, "2")); err != nil {
			t.Fatal(err)
		}
		// The pair owes 12.25 s; a code valid for 10 s cannot wait for it.
		otp := cloudapi.AuthenticationTemplate(alice, "login_code", "en_US", "123456")
		otp.ExpiresAt = time.Now().Add(10 * time.Second)
		before := time.Now()
		_, err := h.c.Send(t.Context(), number, otp)
		var bp *cloudapi.BackpressureError
		if !errors.As(err, &bp) {
			t.Fatalf("Send = %v, want a BackpressureError", err)
		}
		want := cloudapi.BackpressureError{Limit: errcodes.HoldPair, Code: errcodes.PairRateLimit,
			Wait: 12*time.Second + pairlimit.DefaultMargin, ExpiresAt: otp.ExpiresAt, IdempotencyKey: bp.IdempotencyKey}
		if diff := cmp.Diff(want, *bp); diff != "" {
			t.Errorf("BackpressureError (-want +got):\n%s", diff)
		}
		if !errors.Is(err, errcodes.PairRateLimit) || cloudapi.StateOf(err) != cloudapi.StateRefused || bp.RetryAfter() != bp.Wait || time.Since(before) != 0 {
			t.Errorf("err %v after %v", err, time.Since(before))
		}
		if n := len(h.srv.Requests()); n != 2 {
			t.Errorf("%d requests, want only the 2 bubbles", n)
		}
		// Everything was given back: a utility message goes when the debt is paid.
		res, err := h.c.Send(t.Context(), number, cloudapi.Text(alice, "later"))
		if err != nil || res.SentAt.Sub(before) != 12*time.Second+pairlimit.DefaultMargin {
			t.Errorf("next message: %+v %v", res, err)
		}
	})
}

func TestContextDeadlineIsBackpressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.c.Send(t.Context(), number, cloudapi.Text(alice, "1"))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := h.c.Send(ctx, number, cloudapi.Text(alice, "2"))
		if bp := (*cloudapi.BackpressureError)(nil); !errors.As(err, &bp) {
			t.Fatalf("Send = %v", err)
		}
		// Cancelled while waiting: not submitted, reservation given back.
		ctx2, cancel2 := context.WithCancel(t.Context())
		go func() { time.Sleep(time.Second); cancel2() }()
		_, err = h.c.Send(ctx2, number, cloudapi.Text(alice, "3"))
		if !errors.Is(err, context.Canceled) || cloudapi.StateOf(err) != cloudapi.StateNotSubmitted {
			t.Fatalf("Send = %v, state %v", err, cloudapi.StateOf(err))
		}
		if len(h.srv.Requests()) != 1 {
			t.Errorf("requests: %d", len(h.srv.Requests()))
		}
	})
}

func TestMaxAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, cloudapi.WithRetry(backoff.Meta, 3))
		for range 5 {
			h.srv.FailNext(errcodes.PairRateLimit)
		}
		_, err := h.c.Send(t.Context(), number, cloudapi.Text(alice, "x"))
		if !errors.Is(err, backoff.ErrMaxAttempts) || !errors.Is(err, errcodes.PairRateLimit) || !errors.As(err, new(*errcodes.Error)) || cloudapi.StateOf(err) != cloudapi.StateRefused {
			t.Fatalf("Send = %v", err)
		}
		if n := len(h.srv.Requests()); n != 3 {
			t.Errorf("%d requests, want 3", n)
		}
	})
}

func TestBudgetHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		start := time.Now()
		h.srv.FailNext(errcodes.WABARateLimit)
		res, err := h.c.Send(t.Context(), number, cloudapi.Text(alice, "x"))
		if err != nil || res.SentAt.Sub(start) != time.Minute {
			t.Fatalf("Send = %+v %v, want accepted after the 1 min budget hold", res, err)
		}
	})
}

func TestTier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tier := throughput.NewTier(2)
		h := newHarness(t, []cloudapitest.Option{cloudapitest.WithTier(2, 0)}, cloudapi.WithTier(tier))
		for _, to := range []string{alice, bob} {
			if _, err := h.c.Send(t.Context(), number, cloudapi.Template(to, "welcome", "en")); err != nil {
				t.Fatal(err)
			}
		}
		m := cloudapi.Template("+237 690 00 00 03", "welcome", "en")
		m.ExpiresAt = time.Now().Add(time.Hour)
		_, err := h.c.Send(t.Context(), number, m)
		var bp *cloudapi.BackpressureError
		if !errors.As(err, &bp) || bp.Limit != errcodes.HoldTier || bp.Wait != 24*time.Hour || errors.Is(err, errcodes.AuthException) {
			t.Fatalf("Send = %v", err)
		}
		// Inside the service window a template does not count.
		m.InServiceWindow = true
		if _, err := h.c.Send(t.Context(), number, m); err == nil {
			t.Error("the fake's own tier should refuse it: it cannot see the window")
		}
		if n := h.srv.Count(errcodes.BusinessRateLimit); n != 1 {
			t.Errorf("fake tier refusals = %d", n)
		}
	})
}

func TestMarkRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		res, err := h.c.Send(t.Context(), number, cloudapi.MarkRead("wamid.IN1", true))
		if err != nil || res == nil {
			t.Fatalf("MarkRead: %v", err)
		}
		reqs := h.srv.Requests()
		if len(reqs) != 1 || reqs[0].Type != "read" || !bytes.Contains(reqs[0].Body, []byte(`"typing_indicator":{"type":"text"}`)) {
			t.Errorf("requests %+v", reqs)
		}
	})
}

func TestValidationSpendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spent := &spendCounter{Store: pairlimit.NewMemoryStore(nil)}
		pairs := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(spent))
		h := newHarness(t, nil, cloudapi.WithPairLimiter(pairs))
		long := strings.Repeat("x", 4097)
		bad := []struct {
			name  string
			m     cloudapi.Message
			field string
		}{
			{"empty message", cloudapi.Message{}, "type"},
			{"long text", cloudapi.Text(alice, long), "text.body"},
			{"empty text", cloudapi.Text(alice, "  "), "text.body"},
			{"bad utf-8", cloudapi.Text(alice, "\xff"), "text.body"},
			{"bad recipient", cloudapi.Text("12ab", "x"), "to"},
			{"national number", cloudapi.Text("0690000001", "x"), "to"},
			{"four buttons", cloudapi.Buttons(alice, "pick", cloudapi.Button{"a", "A"}, cloudapi.Button{"b", "B"}, cloudapi.Button{"c", "C"}, cloudapi.Button{"d", "D"}), "interactive.action.buttons"},
			{"long button title", cloudapi.Buttons(alice, "pick", cloudapi.Button{"a", strings.Repeat("t", 21)}), "interactive.action.buttons[0].reply.title"},
			{"duplicate ids", cloudapi.Buttons(alice, "pick", cloudapi.Button{"a", "A"}, cloudapi.Button{"a", "B"}), "interactive.action.buttons[1].reply.id"},
			{"eleven rows", cloudapi.List(alice, "menu", "open", cloudapi.Section{Rows: rows(11)}), "interactive.action.sections"},
			{"media with both", cloudapi.Image(alice, cloudapi.Media{ID: "1", Link: "https://x/y.png"}), "image"},
			{"ftp link", cloudapi.Document(alice, cloudapi.Media{Link: "ftp://x/y.pdf"}), "document.link"},
			{"audio caption", cloudapi.Audio(alice, cloudapi.Media{ID: "1", Caption: "no"}), "audio.caption"},
			{"bad template name", cloudapi.Template(alice, "Spring Sale", "en"), "template.name"},
			{"latitude", cloudapi.Location(alice, 91, 0, "", ""), "location.latitude"},
			{"read without id", cloudapi.MarkRead("", false), "message_id"},
		}
		for _, tt := range bad {
			_, err := h.c.Send(t.Context(), number, tt.m)
			var ve *cloudapi.ValidationError
			if !errors.As(err, &ve) || cloudapi.StateOf(err) != cloudapi.StateNotSubmitted || ve.Field != tt.field {
				t.Errorf("%s: Send = %v, want a ValidationError on %q", tt.name, err, tt.field)
			}
			if strings.Contains(fmt.Sprint(err), "690000") {
				t.Errorf("%s: error repeats the recipient: %v", tt.name, err)
			}
		}
		if _, err := h.c.Send(t.Context(), "not-digits", cloudapi.Text(alice, "x")); !errors.As(err, new(*cloudapi.ValidationError)) {
			t.Errorf("bad from: %v", err)
		}
		if _, err := h.c.SendBurst(t.Context(), number, cloudapi.Text(alice, "x"), cloudapi.Text(bob, "y")); !errors.As(err, new(*cloudapi.ValidationError)) {
			t.Errorf("mixed recipients: %v", err)
		}
		msgs := make([]cloudapi.Message, 46)
		for i := range msgs {
			msgs[i] = cloudapi.Text(alice, "x")
		}
		if _, err := h.c.SendBurst(t.Context(), number, msgs...); !errors.Is(err, pairlimit.ErrBurstTooLarge) {
			t.Errorf("46 bubbles: %v", err)
		}
		if len(h.srv.Requests()) != 0 || spent.n.Load() != 0 {
			t.Errorf("invalid input spent something: %d requests, %d pair reservations", len(h.srv.Requests()), spent.n.Load())
		}
		// Every valid constructor goes through.
		good := []cloudapi.Message{
			cloudapi.Text(alice, "hi"), cloudapi.TextWithPreview(alice, "https://example.com"),
			cloudapi.Template(alice, "order_update", "en_US", cloudapi.Header(cloudapi.ImageParam(cloudapi.Media{Link: "https://example.com/a.png"})),
				cloudapi.Body(cloudapi.TextParam("Ada"), cloudapi.CurrencyParam("$10", "USD", 10000)), cloudapi.QuickReplyButton(0, "stop")),
			cloudapi.Image(alice, cloudapi.Media{ID: "123", Caption: "look"}), cloudapi.Document(alice, cloudapi.Media{Link: "https://example.com/a.pdf", Filename: "a.pdf"}),
			cloudapi.Audio(alice, cloudapi.Media{ID: "9"}), cloudapi.Video(alice, cloudapi.Media{ID: "9"}), cloudapi.Sticker(alice, cloudapi.Media{ID: "9"}),
			cloudapi.Buttons(alice, "pick", cloudapi.Button{"y", "Yes"}, cloudapi.Button{"n", "No"}),
			cloudapi.List(alice, "menu", "open", cloudapi.Section{Title: "A", Rows: rows(5)}, cloudapi.Section{Title: "B", Rows: []cloudapi.Row{{ID: "z", Title: "Z"}}}),
			cloudapi.Location(alice, 3.848, 11.502, "Office", "Yaoundé"), cloudapi.Reaction(alice, "wamid.X", "👍"),
		}
		for i, m := range good {
			if err := m.Validate(); err != nil {
				t.Errorf("message %d: %v", i, err)
			}
		}
	})
}

func rows(n int) []cloudapi.Row {
	out := make([]cloudapi.Row, n)
	for i := range out {
		out[i] = cloudapi.Row{ID: fmt.Sprint("r", i), Title: fmt.Sprint("Row ", i)}
	}
	return out
}

func TestLogsEveryAttemptWithoutSecrets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.srv.FailNextFor(alice, errcodes.PairRateLimit)
		if _, err := h.c.Send(t.Context(), number, cloudapi.Text(alice, "x")); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(h.logs.String()), "\n")
		if len(lines) != 2 {
			t.Fatalf("%d log lines, want 2:\n%s", len(lines), h.logs)
		}
		for _, want := range []string{`"code":131056`, `"attempt":2`, `"wamid":"wamid.TEST1"`, `"to":"2376*****001"`, `"pair":"`} {
			if !strings.Contains(h.logs.String(), want) {
				t.Errorf("logs lack %s:\n%s", want, h.logs)
			}
		}
		if strings.Contains(h.logs.String(), "237690000001") {
			t.Error("logs contain the full recipient")
		}
		evs := h.events()
		if len(evs) != 2 || evs[0].State != cloudapi.StateRefused || evs[0].Code != errcodes.PairRateLimit || evs[1].State != cloudapi.StateAccepted || evs[0].Pair != evs[1].Pair {
			t.Errorf("events %+v", evs)
		}
	})
}

func TestTokenNeverLeaks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		// A token the server does not know: 401 with code 190.
		other, err := cloudapi.New("EAAGwrongTOKEN0987654321zyxwvu", cloudapi.WithHTTPClient(h.srv.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		_, err = other.Send(t.Context(), number, cloudapi.Text(alice, "x"))
		if !errors.Is(err, errcodes.AccessTokenExpired) || strings.Contains(err.Error(), "EAAGwrong") {
			t.Errorf("Send = %v", err)
		}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			if out := fmt.Sprintf(verb, h.c); strings.Contains(out, secretToken) {
				t.Errorf("%s of a Client prints the token: %s", verb, out)
			}
		}
		for _, bad := range []string{"", "a b", "tok\n"} {
			if _, err := cloudapi.New(bad); !errors.Is(err, cloudapi.ErrInvalidOption) || (bad != "" && strings.Contains(err.Error(), bad)) {
				t.Errorf("New(%q) = %v", bad, err)
			}
		}
	})
}

func TestOptionsAreValidated(t *testing.T) {
	t.Parallel()
	bad := map[string]cloudapi.Option{
		"base url":       cloudapi.WithBaseURL("graph.facebook.com"),
		"version":        cloudapi.WithAPIVersion("23"),
		"nil client":     cloudapi.WithHTTPClient(nil),
		"nil clock":      cloudapi.WithClock(nil),
		"nil logger":     cloudapi.WithLogger(nil),
		"nil pairs":      cloudapi.WithPairLimiter(nil),
		"zero mps":       cloudapi.WithThroughput(0),
		"number mps":     cloudapi.WithNumberThroughput("abc", 80),
		"nil budget":     cloudapi.WithBudget(nil),
		"retry":          cloudapi.WithRetry(nil, 0),
		"key generator":  cloudapi.WithIdempotencyKeys(nil),
		"zero number mp": cloudapi.WithNumberThroughput(number, 0),
	}
	for name, o := range bad {
		if _, err := cloudapi.New(secretToken, o); !errors.Is(err, cloudapi.ErrInvalidOption) {
			t.Errorf("%s: New = %v", name, err)
		}
	}
	c, err := cloudapi.New(secretToken, cloudapi.WithNumberThroughput(number, throughput.Upgraded), cloudapi.WithAPIVersion("v21.0"))
	if err != nil || c.Number(number).PerSecond() != 1000 || c.Number("1").PerSecond() != 80 {
		t.Errorf("throughput overrides: %v", err)
	}
}

func TestConcurrentSendsShareLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, []cloudapitest.Option{cloudapitest.WithThroughput(20)}, cloudapi.WithThroughput(20))
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		for i := range 200 {
			wg.Go(func() {
				// 100 recipients, two messages each, all at once.
				_, err := h.c.Send(t.Context(), number, cloudapi.Text(fmt.Sprintf("+2376920000%02d", i%100), "x"))
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if a, p, n := h.srv.Accepted(), h.srv.Count(errcodes.PairRateLimit), h.srv.Count(errcodes.ThroughputLimit); a != 200 || p != 0 || n != 0 {
			t.Errorf("accepted %d, 131056 %d, 130429 %d", a, p, n)
		}
	})
}
