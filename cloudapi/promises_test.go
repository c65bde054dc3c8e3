package cloudapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
	"github.com/wapace/wapace/throughput"
)

// Promise 1: a 5xx means the server may have acted. Only codes that prove
// refusal even at a 5xx (2494100, documented at 503) are retried.
func TestFiveHundredsAreUnknownUnlessTheyProveRefusal(t *testing.T) {
	for _, tc := range []struct {
		name     string
		f        cloudapitest.Failure
		state    cloudapi.SendState
		requests int
	}{
		{"131056 at 500", cloudapitest.Failure{Code: errcodes.PairRateLimit, Status: 500}, cloudapi.StateSubmittedUnknown, 1},
		{"130429 at 503", cloudapitest.Failure{Code: errcodes.ThroughputLimit, Status: 503}, cloudapi.StateSubmittedUnknown, 1},
		{"100 at 502", cloudapitest.Failure{Code: errcodes.InvalidParameter, Status: 502}, cloudapi.StateSubmittedUnknown, 1},
		{"131049 at 500", cloudapitest.Failure{Code: errcodes.MarketingLimit, Status: 500}, cloudapi.StateSubmittedUnknown, 1},
		{"2494100 at 503 is retried", cloudapitest.Failure{Code: errcodes.MaintenanceMode, Status: 503}, cloudapi.StateAccepted, 2},
		{"131056 at 400 is retried", cloudapitest.Failure{Code: errcodes.PairRateLimit}, cloudapi.StateAccepted, 2},
		{"100 at 400 is failed", cloudapitest.Failure{Code: errcodes.InvalidParameter}, cloudapi.StateFailed, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil)
				h.srv.Script(tc.f)
				_, err := h.c.Send(t.Context(), number, cloudapi.Text(alice, "x"))
				if got := cloudapi.StateOf(err); got != tc.state {
					t.Errorf("StateOf = %v (%v), want %v", got, err, tc.state)
				}
				if tc.state == cloudapi.StateSubmittedUnknown && !errors.Is(err, cloudapi.ErrSubmittedUnknown) {
					t.Errorf("err %v does not match ErrSubmittedUnknown", err)
				}
				if n := len(h.srv.Requests()); n != tc.requests {
					t.Errorf("%d requests, want %d", n, tc.requests)
				}
			})
		})
	}
}

// Promise 2: a cancel or timeout before a byte was written leaves the
// message not submitted (safe to send again), not unknown.
func TestCancelBeforeWriteIsNotSubmitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A dial that never completes: the request cannot have left.
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		defer tr.CloseIdleConnections()
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(&http.Client{Transport: tr}), cloudapi.WithBaseURL("http://meta.invalid"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		m := cloudapi.Text(alice, "x")
		m.IdempotencyKey = "k1"
		_, err = c.Send(ctx, number, m)
		var se *cloudapi.SendError
		if !errors.As(err, &se) || se.State != cloudapi.StateNotSubmitted || errors.Is(err, cloudapi.ErrSubmittedUnknown) {
			t.Fatalf("Send = %v, want a not-submitted SendError", err)
		}
		// Not sent, so the key may be sent again (no ErrDuplicate).
		ctx2, cancel2 := context.WithTimeout(t.Context(), time.Second)
		defer cancel2()
		if _, err := c.Send(ctx2, number, m); errors.Is(err, cloudapi.ErrDuplicate) {
			t.Errorf("resend of a message never sent: %v", err)
		}
	})
}

// A transport that does not report to httptrace and fails after writing:
// the outcome stays unknown (never assume nothing left).
type opaqueTransport struct{}

func (opaqueTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	return nil, errors.New("connection reset")
}

func TestUntracedTransportErrorIsUnknown(t *testing.T) {
	c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(&http.Client{Transport: opaqueTransport{}}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(t.Context(), number, cloudapi.Text(alice, "x"))
	if !errors.Is(err, cloudapi.ErrSubmittedUnknown) {
		t.Fatalf("Send = %v, want ErrSubmittedUnknown", err)
	}
}

// Promise 4: everything serialised later is validated first: a bad
// date_time costs nothing, the pair least of all.
func TestBadParametersFailBeforeSpending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spent := &spendCounter{Store: pairlimit.NewMemoryStore(nil)}
		pairs := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(spent))
		h := newHarness(t, nil, cloudapi.WithPairLimiter(pairs))
		dt := func(raw string) cloudapi.Component {
			return cloudapi.Body(cloudapi.Parameter{Type: "date_time", DateTime: json.RawMessage(raw)})
		}
		idx := 0
		bad := []struct {
			name  string
			m     cloudapi.Message
			field string
		}{
			{"date_time not JSON", cloudapi.Template(alice, "t", "en", dt(`{"fallback_value":`)), "template.components[0].parameters[0].date_time"},
			{"date_time not an object", cloudapi.Template(alice, "t", "en", dt(`"monday"`)), "template.components[0].parameters[0].date_time"},
			{"date_time without fallback", cloudapi.Template(alice, "t", "en", dt(`{"day_of_week":1}`)), "template.components[0].parameters[0].date_time.fallback_value"},
			{"currency without object", cloudapi.Template(alice, "t", "en", cloudapi.Body(cloudapi.Parameter{Type: "currency"})), "template.components[0].parameters[0].currency"},
			{"currency code", cloudapi.Template(alice, "t", "en", cloudapi.Body(cloudapi.CurrencyParam("$1", "usd", 1000))), "template.components[0].parameters[0].currency.code"},
			{"image without media", cloudapi.Template(alice, "t", "en", cloudapi.Header(cloudapi.Parameter{Type: "image"})), "template.components[0].parameters[0].image"},
			{"two fields", cloudapi.Template(alice, "t", "en", cloudapi.Body(cloudapi.Parameter{Type: "text", Text: "a", Payload: "b"})), "template.components[0].parameters[0]"},
			// Issue 16: parameters the package cannot express are rejected, not sent empty.
			// Issue 22 made flow buttons expressible (FlowButton): an empty
			// action is still rejected, not sent empty.
			{"flow action", cloudapi.Template(alice, "t", "en", cloudapi.Component{Type: "button", SubType: "flow", Index: &idx, Parameters: []cloudapi.Parameter{{Type: "action"}}}), "template.components[0].parameters[0].action"},
			{"location header", cloudapi.Template(alice, "t", "en", cloudapi.Header(cloudapi.Parameter{Type: "location"})), "template.components[0].parameters[0].type"},
			{"limited-time offer without expiry", cloudapi.Template(alice, "t", "en", cloudapi.Component{Type: "limited_time_offer", Parameters: []cloudapi.Parameter{{Type: "limited_time_offer"}}}), "template.components[0].parameters[0].limited_time_offer.expiration_time_ms"},
			{"carousel without cards", cloudapi.Template(alice, "t", "en", cloudapi.Carousel()), "template.components[0].cards"},
			{"carousel card with a bad button", cloudapi.Template(alice, "t", "en", cloudapi.Carousel([]cloudapi.Component{cloudapi.Header(cloudapi.ImageParam(cloudapi.Media{ID: "1"})), {Type: "button", SubType: "quick_reply"}})), "template.components[0].cards[0].components[1].index"},
			{"copy code too long", cloudapi.Template(alice, "t", "en", cloudapi.CopyCodeButton(0, strings.Repeat("C", 16))), "template.components[0].parameters[0].coupon_code"},
			// Issue 12 section 4: Meta's template parameter limits.
			{"header param over 60", cloudapi.Template(alice, "t", "en", cloudapi.Header(cloudapi.TextParam(strings.Repeat("h", 61)))), "template.components[0].parameters[0].text"},
			{"body param over 1024 with a header", cloudapi.Template(alice, "t", "en", cloudapi.Header(cloudapi.TextParam("h")), cloudapi.Body(cloudapi.TextParam(strings.Repeat("b", 1025)))), "template.components[1].parameters[0].text"},
			{"bad parameter name", cloudapi.Template(alice, "t", "en", cloudapi.Body(cloudapi.NamedTextParam("First Name", "Ada"))), "template.components[0].parameters[0].parameter_name"},
			{"duplicate parameter name", cloudapi.Template(alice, "t", "en", cloudapi.Body(cloudapi.NamedTextParam("a", "1"), cloudapi.NamedTextParam("a", "2"))), "template.components[0].parameters[1].parameter_name"},
			{"named and positional", cloudapi.Template(alice, "t", "en", cloudapi.Body(cloudapi.NamedTextParam("a", "1"), cloudapi.TextParam("2"))), "template.components[0].parameters"},
			{"duplicate button titles", cloudapi.Buttons(alice, "pick", cloudapi.Button{ID: "a", Title: "Yes"}, cloudapi.Button{ID: "b", Title: "Yes"}), "interactive.action.buttons[1].reply.title"},
			// Promise 5: a key that JSON would alter never matches its webhooks.
			{"key not UTF-8", withKey(cloudapi.Text(alice, "x"), "order-\xff"), "idempotency_key"},
			// Issue 12 section 1: no authentication template to a BSUID (131062).
			{"authentication to a BSUID", cloudapi.AuthenticationTemplate("CO.1949266959121697", "login_code", "en", "123456"), "to"},
		}
		for _, tt := range bad {
			_, err := h.c.Send(t.Context(), number, tt.m)
			var ve *cloudapi.ValidationError
			if !errors.As(err, &ve) || ve.Field != tt.field {
				t.Errorf("%s: Send = %v, want a ValidationError on %q", tt.name, err, tt.field)
			}
			if err := tt.m.Validate(); !errors.As(err, &ve) {
				t.Errorf("%s: Validate = %v", tt.name, err)
			}
		}
		if n := len(h.srv.Requests()); n != 0 || spent.n.Load() != 0 {
			t.Errorf("invalid input spent something: %d requests, %d pair reservations", n, spent.n.Load())
		}
		good := []cloudapi.Message{
			cloudapi.Template(alice, "t", "en", dt(`{"fallback_value":"Monday"}`)),
			cloudapi.Template(alice, "t", "en", cloudapi.Body(cloudapi.TextParam(strings.Repeat("b", 32768)))),
			cloudapi.Template(alice, "t", "en", cloudapi.Body(cloudapi.NamedTextParam("first_name", "Ada"), cloudapi.NamedTextParam("order_2", "42"))),
			cloudapi.Template(alice, "t", "en", cloudapi.Body(cloudapi.TextParam("25OFF")), cloudapi.CopyCodeButton(0, "25OFF")),
			cloudapi.Template(alice, "t", "en", cloudapi.LimitedTimeOffer(time.Now().Add(48*time.Hour)), cloudapi.CopyCodeButton(0, "25OFF"), cloudapi.URLButton(1, "offer")),
			cloudapi.Template(alice, "t", "en", cloudapi.Body(cloudapi.TextParam("Ada")), cloudapi.Carousel(
				[]cloudapi.Component{cloudapi.Header(cloudapi.ImageParam(cloudapi.Media{ID: "1"})), cloudapi.QuickReplyButton(0, "more-1")},
				[]cloudapi.Component{cloudapi.Header(cloudapi.ImageParam(cloudapi.Media{ID: "2"})), cloudapi.URLButton(0, "p/2")})),
		}
		for i, m := range good {
			if err := m.Validate(); err != nil {
				t.Errorf("good message %d: %v", i, err)
			}
		}
	})
}

func withKey(m cloudapi.Message, key string) cloudapi.Message {
	m.IdempotencyKey = key
	return m
}

// Issue 12 section 1: a BSUID recipient is addressed with "recipient".
func TestBSUIDRecipient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		const user = "CO.1949266959121697"
		for _, m := range []cloudapi.Message{cloudapi.Text(user, "hi"), cloudapi.Template(user, "order_update", "en"),
			cloudapi.Image(user, cloudapi.Media{ID: "1"}), cloudapi.Reaction(user, "wamid.X", "👍"),
			cloudapi.Text("US.13491208655302741918", "Meta's own example"), cloudapi.Text("US.ENT.11815799212886844830", "a parent BSUID")} {
			if err := m.Validate(); err != nil {
				t.Fatalf("%s to a BSUID: %v", m.Kind(), err)
			}
		}
		start := time.Now()
		if _, err := h.c.SendBurst(t.Context(), number, cloudapi.Text(user, "1"), cloudapi.Text(user, "2")); err != nil {
			t.Fatal(err)
		}
		res, err := h.c.Send(t.Context(), number, cloudapi.Text(user, "3"))
		if err != nil {
			t.Fatal(err)
		}
		// Paced exactly like a phone number: two bubbles owe 12 s.
		if got := res.SentAt.Sub(start); got != 12*time.Second+pairlimit.DefaultMargin {
			t.Errorf("third message at +%v", got)
		}
		for _, r := range h.srv.Requests() {
			var body map[string]any
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			if _, ok := body["to"]; ok || body["recipient"] != user {
				t.Errorf("body %s: want recipient and no to", r.Body)
			}
		}
	})
}

// Bursts: a 131056 on bubble k keeps only the debt of the bubbles Meta
// accepted; the rest wait the hold, not the whole reservation's debt.
func TestBurstRefusalHoldsOnlyWhatTheModelRequires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		start := time.Now()
		h.srv.Script(cloudapitest.Failure{Code: errcodes.PairRateLimit, Nth: 2})
		rs, err := h.c.SendBurst(t.Context(), number, cloudapi.Text(alice, "1/3"), cloudapi.Text(alice, "2/3"), cloudapi.Text(alice, "3/3"))
		if err != nil {
			t.Fatalf("SendBurst = %v", err)
		}
		var at []time.Duration
		for _, r := range rs {
			at = append(at, r.SentAt.Sub(start))
		}
		// Bubbles 2 and 3 go together once the pair has repaid bubble 1 (and
		// the 1 s hold of a first 131056 is over), not after the 18 s debt
		// of the whole reservation.
		due := 6*time.Second + pairlimit.DefaultMargin
		if want := []time.Duration{0, due, due}; !reflect.DeepEqual(at, want) {
			t.Errorf("bubbles sent at %v, want %v", at, want)
		}
	})
}

// Idempotency: a key already sent makes zero requests and returns the first
// outcome.
func TestDuplicateKeyMakesNoRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		m := withKey(cloudapi.Text(alice, "once"), "order-1")
		first, err := h.c.Send(t.Context(), number, m)
		if err != nil {
			t.Fatal(err)
		}
		res, err := h.c.Send(t.Context(), number, m)
		var se *cloudapi.SendError
		if !errors.Is(err, cloudapi.ErrDuplicate) || !errors.As(err, &se) || !se.Duplicate || res != first || cloudapi.StateOf(err) != cloudapi.StateAccepted {
			t.Errorf("second Send = %+v, %v; want ErrDuplicate carrying the first result", res, err)
		}
		// A failed key and an unknown key are remembered too.
		h.srv.FailNext(errcodes.MarketingLimit)
		failed := withKey(cloudapi.Template(bob, "promo", "en"), "promo-1")
		_, err1 := h.c.Send(t.Context(), number, failed)
		_, err2 := h.c.Send(t.Context(), number, failed)
		if !errors.Is(err2, cloudapi.ErrDuplicate) || cloudapi.StateOf(err2) != cloudapi.StateFailed || !errors.Is(err2, errcodes.MarketingLimit) {
			t.Errorf("duplicate of a failed send = %v (first %v)", err2, err1)
		}
		h.srv.Script(cloudapitest.Failure{Reset: true})
		unknown := withKey(cloudapi.Text("+237 690 00 00 09", "x"), "u-1")
		h.c.Send(t.Context(), number, unknown)
		if _, err := h.c.Send(t.Context(), number, unknown); !errors.Is(err, cloudapi.ErrDuplicate) || !errors.Is(err, cloudapi.ErrSubmittedUnknown) {
			t.Errorf("duplicate of an unknown send = %v", err)
		}
		// Keys repeated inside one burst are duplicates too (or, for
		// bubbles with other content, conflicts).
		if _, err := h.c.SendBurst(t.Context(), number, withKey(cloudapi.Text(alice, "a"), "b-1"), withKey(cloudapi.Text(alice, "a"), "b-1")); !errors.Is(err, cloudapi.ErrDuplicate) {
			t.Errorf("repeated key in a burst = %v", err)
		}
		if _, err := h.c.SendBurst(t.Context(), number, withKey(cloudapi.Text(alice, "a"), "b-1"), withKey(cloudapi.Text(alice, "b"), "b-1")); !errors.Is(err, cloudapi.ErrIdempotencyConflict) {
			t.Errorf("repeated key in a burst, other content = %v", err)
		}
		if n := len(h.srv.Requests()); n != 3 {
			t.Errorf("%d requests, want 3 (one per key)", n)
		}
	})
}

func TestIdempotencyMemoryIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, cloudapi.WithIdempotencyMemory(2, time.Hour))
		send := func(key string) error {
			_, err := h.c.Send(t.Context(), number, withKey(cloudapi.Text(fmt.Sprintf("+23769100%04d", int(key[0])), "x"), key))
			return err
		}
		for _, k := range []string{"a", "b", "c"} {
			if err := send(k); err != nil {
				t.Fatal(err)
			}
		}
		if err := send("c"); !errors.Is(err, cloudapi.ErrDuplicate) {
			t.Errorf("recent key: %v", err)
		}
		if err := send("a"); err != nil { // evicted: the third key pushed it out
			t.Errorf("evicted key: %v", err)
		}
		time.Sleep(time.Hour)
		if err := send("c"); err != nil { // aged out
			t.Errorf("aged key: %v", err)
		}
	})
}

// Promise 6: Meta's fields echoing a short token never reach errors or logs.
func TestShortTokenEchoedByMetaIsScrubbed(t *testing.T) {
	const short = "EAAshort123"
	echo := roundTrip(func(r *http.Request) (*http.Response, error) {
		body := `{"error":{"message":"(#190) token EAAshort123 is invalid","type":"OAuthException","code":131999,"title":"bad EAAshort123","error_data":{"details":"EAAshort123"},"fbtrace_id":"EAAshort123"}}`
		return &http.Response{StatusCode: 400, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})
	var logs bytes.Buffer
	c, err := cloudapi.New(short, cloudapi.WithHTTPClient(&http.Client{Transport: echo}),
		cloudapi.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(t.Context(), number, cloudapi.Text(alice, "x"))
	var ge *errcodes.Error
	if !errors.As(err, &ge) {
		t.Fatalf("Send = %v", err)
	}
	all := fmt.Sprintf("%v %+v %s %s %s %s %s", err, *ge, ge.Message, ge.Title, ge.Details, ge.FBTraceID, logs.String())
	if strings.Contains(all, short) {
		t.Errorf("the token leaks: %s", all)
	}
	// Printing the Client value, not only the pointer, hides the token.
	for _, verb := range []string{"%v", "%+v", "%#v"} {
		if out := fmt.Sprintf(verb, reflect.ValueOf(c).Elem().Interface()); strings.Contains(out, short) {
			t.Errorf("%s of a Client value prints the token", verb)
		}
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Issue 16: a 2xx whose body is a Graph error object is that error.
func TestCheckResponse(t *testing.T) {
	t.Parallel()
	resp := func(status int, body string) *http.Response {
		return &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
	}
	for _, tc := range []struct {
		name   string
		status int
		body   string
		code   errcodes.Code // 0: success or not a Graph error
		ok     bool
	}{
		{"success", 200, `{"messages":[{"id":"wamid.1"}]}`, 0, true},
		{"success that says error", 200, `{"messages":[{"id":"wamid.1","text":"error"}]}`, 0, true},
		{"200 with an error object", 200, `{"error":{"code":131056,"message":"(#131056) pair"}}`, errcodes.PairRateLimit, false},
		{"400", 400, `{"error":{"code":100,"message":"bad"}}`, errcodes.InvalidParameter, false},
		{"proxy page", 502, `<html>bad gateway</html>`, 0, false},
		{"too large", 200, strings.Repeat(" ", 1<<20+1), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := cloudapi.CheckResponse(resp(tc.status, tc.body))
			var ge *errcodes.Error
			switch {
			case tc.ok:
				if err != nil || len(body) == 0 {
					t.Errorf("= %q, %v; want the body", body, err)
				}
			case tc.code != 0:
				if !errors.As(err, &ge) || ge.Code != tc.code || ge.HTTPStatus != tc.status {
					t.Errorf("= %v; want code %d", err, tc.code)
				}
			default:
				if err == nil || errors.As(err, &ge) {
					t.Errorf("= %v; want a non-Graph error", err)
				}
			}
		})
	}
}

// Promise 8: options are validated one way, and a custom *http.Client keeps
// a bounded timeout.
func TestOptionsOneWay(t *testing.T) {
	for name, o := range map[string]cloudapi.Option{
		"nil option":      nil,
		"nil tier":        cloudapi.WithTier(nil),
		"nil observer":    cloudapi.WithObserver(nil),
		"idempotency":     cloudapi.WithIdempotencyMemory(0, time.Hour),
		"idempotency age": cloudapi.WithIdempotencyMemory(10, 0),
	} {
		if _, err := cloudapi.New(secretToken, o); !errors.Is(err, cloudapi.ErrInvalidOption) {
			t.Errorf("%s: New = %v", name, err)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t)
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(srv.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		srv.Script(cloudapitest.Failure{Hang: true})
		start := time.Now()
		_, err = c.Send(context.Background(), number, cloudapi.Text(alice, "x"))
		if !errors.Is(err, cloudapi.ErrSubmittedUnknown) || time.Since(start) != cloudapi.DefaultTimeout {
			t.Errorf("Send = %v after %v, want unknown after %v", err, time.Since(start), cloudapi.DefaultTimeout)
		}
	})
}

// Promise 3: tier capacity reserved for a message that never went out is
// given back.
func TestTierGivenBackWhenNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tier := throughput.NewTier(1)
		h := newHarness(t, nil, cloudapi.WithTier(tier))
		h.srv.FailNext(errcodes.InvalidParameter) // Meta refuses it: no conversation opens
		if _, err := h.c.Send(t.Context(), number, cloudapi.Template(alice, "welcome", "en")); cloudapi.StateOf(err) != cloudapi.StateFailed {
			t.Fatalf("first template: %v", err)
		}
		if n := tier.Count(time.Now()); n != 0 {
			t.Errorf("tier counts %d after a message that was not sent", n)
		}
		m := cloudapi.Template(bob, "welcome", "en")
		m.ExpiresAt = time.Now().Add(time.Hour)
		if _, err := h.c.Send(t.Context(), number, m); err != nil {
			t.Errorf("second template: %v", err)
		}
	})
}

// Issue 12 section 4: the default Graph API version follows Meta's
// changelog (v26.0, July 2026); anything older than v25.0 is stale.
func TestDefaultAPIVersionIsRecent(t *testing.T) {
	t.Parallel()
	var major, minor int
	if _, err := fmt.Sscanf(cloudapi.DefaultAPIVersion, "v%d.%d", &major, &minor); err != nil {
		t.Fatalf("DefaultAPIVersion %q: %v", cloudapi.DefaultAPIVersion, err)
	}
	if major < 25 {
		t.Errorf("DefaultAPIVersion %s is older than v25.0", cloudapi.DefaultAPIVersion)
	}
}

// A refusal for a limit that no limiter holds is refused, not retried at
// the schedule's pace against a limit nobody waits out.
func TestUnheldRefusalIsNotRetried(t *testing.T) {
	for _, code := range []errcodes.Code{errcodes.SpamRateLimit, errcodes.BusinessRateLimit} {
		t.Run(fmt.Sprint(int(code)), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil)
				h.srv.FailNext(code)
				_, err := h.c.Send(t.Context(), number, cloudapi.Template(alice, "t", "en"))
				if cloudapi.StateOf(err) != cloudapi.StateRefused || !errors.Is(err, code) || len(h.srv.Requests()) != 1 {
					t.Errorf("Send = %v (%v), %d requests", err, cloudapi.StateOf(err), len(h.srv.Requests()))
				}
			})
		})
	}
}

// Promise 2 through the fake: a request that never left is not submitted.
func TestStalledRequestIsNotSubmitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.srv.Script(cloudapitest.Failure{Stall: true})
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err := h.c.Send(ctx, number, cloudapi.Text(alice, "x"))
		if cloudapi.StateOf(err) != cloudapi.StateNotSubmitted || len(h.srv.Requests()) != 0 {
			t.Fatalf("Send = %v (%v), %d requests", err, cloudapi.StateOf(err), len(h.srv.Requests()))
		}
		// Nothing was sent, so the pair owes nothing: the next message goes now.
		before := time.Now()
		if res, err := h.c.Send(t.Context(), number, cloudapi.Text(alice, "y")); err != nil || !res.SentAt.Equal(before) {
			t.Errorf("next message: %+v %v", res, err)
		}
	})
}

// Many goroutines sending one key: exactly one request, every other call
// a duplicate.
func TestConcurrentDuplicates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		m := withKey(cloudapi.Text(alice, "once"), "same-key")
		errs := make(chan error, 50)
		for range 50 {
			go func() {
				_, err := h.c.Send(t.Context(), number, m)
				errs <- err
			}()
		}
		ok, dup := 0, 0
		for range 50 {
			switch err := <-errs; {
			case err == nil:
				ok++
			case errors.Is(err, cloudapi.ErrDuplicate):
				dup++
			default:
				t.Error(err)
			}
		}
		if ok != 1 || dup != 49 || len(h.srv.Requests()) != 1 {
			t.Errorf("%d accepted, %d duplicates, %d requests", ok, dup, len(h.srv.Requests()))
		}
	})
}

func FuzzCheckResponse(f *testing.F) {
	f.Add(200, []byte(`{"messages":[{"id":"wamid.1"}]}`))
	f.Add(200, []byte(`{"error":{"code":131056}}`))
	f.Add(500, []byte(`{"error":{"code":"131000","message":"x"}}`))
	f.Add(502, []byte(`<html>`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 599 {
			return
		}
		resp := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
		data, err := cloudapi.CheckResponse(resp)
		ok := status >= 200 && status < 300
		switch {
		case err == nil && !ok:
			t.Fatalf("status %d accepted", status)
		case err == nil && !bytes.Equal(data, body):
			t.Fatalf("success body altered")
		case err != nil && data != nil:
			t.Fatalf("error with a body")
		}
		var ge *errcodes.Error
		if errors.As(err, &ge) && ge.HTTPStatus != status {
			t.Fatalf("status %d recorded as %d", status, ge.HTTPStatus)
		}
	})
}

// Error texts name the package once.
func TestErrorTextsArePrefixedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		var errs []error
		_, err := h.c.SendBurst(t.Context(), number, cloudapi.Text(alice, "ok"), cloudapi.Text(alice, ""))
		errs = append(errs, err)
		h.srv.FailNext(errcodes.MarketingLimit)
		_, err = h.c.Send(t.Context(), number, cloudapi.Template(bob, "t", "en"))
		errs = append(errs, err)
		h.srv.Script(cloudapitest.Failure{Reset: true})
		_, err = h.c.Send(t.Context(), number, cloudapi.Text("+237 690 00 00 07", "x"))
		errs = append(errs, err)
		for _, err := range errs {
			if err == nil || strings.Count(err.Error(), "cloudapi: ") != 1 {
				t.Errorf("error text %q", err)
			}
		}
		var ve *cloudapi.ValidationError
		if !errors.As(errs[0], &ve) || ve.Field != "messages[1].text.body" {
			t.Errorf("bubble error %v", errs[0])
		}
	})
}

// Issue 12 section 5: more message types, validated before spending.
func TestMoreMessageTypes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		for _, tc := range []struct {
			m    cloudapi.Message
			want string // a fragment of the request body
		}{
			{cloudapi.Voice(alice, cloudapi.Media{ID: "9"}), `"audio":{"id":"9","voice":true}`},
			{cloudapi.CallToAction(alice, "See your order", "Open", "https://example.com/o/1"), `"action":{"name":"cta_url","parameters":{"display_text":"Open","url":"https://example.com/o/1"}}`},
			{cloudapi.LocationRequest(alice, "Where should we deliver?"), `"type":"location_request_message"`},
			{cloudapi.Contacts(alice, cloudapi.ContactCard{FormattedName: "Ada L.", FirstName: "Ada", Phones: []string{"+44 20 7946 0000"}}),
				`"contacts":[{"name":{"formatted_name":"Ada L.","first_name":"Ada"},"phones":[{"phone":"+44 20 7946 0000"}]}]`},
		} {
			before := len(h.srv.Requests())
			tc.m.ReplyTo = "wamid.IN1"
			if _, err := h.c.Send(t.Context(), number, tc.m); err != nil {
				t.Fatalf("%s: %v", tc.want, err)
			}
			body := string(h.srv.Requests()[before].Body)
			if !strings.Contains(body, tc.want) || !strings.Contains(body, `"context":{"message_id":"wamid.IN1"}`) {
				t.Errorf("body %s lacks %s or the reply context", body, tc.want)
			}
			time.Sleep(time.Minute)
		}
		for name, m := range map[string]cloudapi.Message{
			"voice caption":  cloudapi.Voice(alice, cloudapi.Media{ID: "9", Caption: "no"}),
			"cta long label": cloudapi.CallToAction(alice, "b", strings.Repeat("x", 21), "https://example.com"),
			"cta bad url":    cloudapi.CallToAction(alice, "b", "Open", "javascript:alert(1)"),
			"location empty": cloudapi.LocationRequest(alice, " "),
			"no contact":     cloudapi.Contacts(alice),
			"unnamed":        cloudapi.Contacts(alice, cloudapi.ContactCard{Phones: []string{"1"}}),
		} {
			if err := m.Validate(); !errors.As(err, new(*cloudapi.ValidationError)) {
				t.Errorf("%s: Validate = %v", name, err)
			}
		}
	})
}

// brokenStore fails every pair decision, as a Redis store does when the
// server is down.
type brokenStore struct{}

var errDown = errors.New("store down")

func (brokenStore) Reserve(context.Context, pairstore.Pair, time.Time, time.Duration, time.Duration) (pairstore.Ticket, bool, error) {
	return pairstore.Ticket{}, false, errDown
}
func (brokenStore) Next(context.Context, pairstore.Pair, time.Time) (time.Time, error) {
	return time.Time{}, errDown
}
func (brokenStore) Cancel(context.Context, pairstore.Pair, time.Time, pairstore.Ticket) (bool, error) {
	return false, errDown
}
func (brokenStore) Refuse(context.Context, pairstore.Pair, time.Time, []time.Duration, time.Duration) (time.Duration, error) {
	return 0, errDown
}
func (brokenStore) Accept(context.Context, pairstore.Pair, time.Time) error { return errDown }

// A limiter that cannot decide sends nothing: not submitted, zero requests.
func TestPairStoreErrorSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, cloudapi.WithPairLimiter(pairlimit.New(pairlimit.Meta, pairlimit.WithStore(brokenStore{}))))
		_, err := h.c.Send(t.Context(), number, cloudapi.Text(alice, "x"))
		if cloudapi.StateOf(err) != cloudapi.StateNotSubmitted || !errors.Is(err, pairlimit.ErrStore) || len(h.srv.Requests()) != 0 {
			t.Errorf("Send = %v (%v), %d requests", err, cloudapi.StateOf(err), len(h.srv.Requests()))
		}
	})
}

// Issue 12 section 5: headers and footers on interactive messages.
func TestInteractiveHeadersAndFooters(t *testing.T) {
	t.Parallel()
	img := &cloudapi.Media{Link: "https://example.com/a.png"}
	buttons := cloudapi.Buttons(alice, "pick", cloudapi.Button{ID: "y", Title: "Yes"})
	list := cloudapi.List(alice, "menu", "open", cloudapi.Section{Rows: rows(2)})
	for name, tc := range map[string]struct {
		m     cloudapi.Message
		field string // "" when valid
	}{
		"buttons text header and footer": {buttons.WithHeader("Your order", "", nil).WithFooter("Reply within 24 h"), ""},
		"buttons image header":           {buttons.WithHeader("", cloudapi.KindImage, img), ""},
		"list text header":               {list.WithHeader("Menu", "", nil).WithFooter("Prices incl. VAT"), ""},
		"cta footer":                     {cloudapi.CallToAction(alice, "b", "Open", "https://example.com").WithFooter("f"), ""},
		"list media header":              {list.WithHeader("", cloudapi.KindImage, img), "interactive.header"},
		"long footer":                    {buttons.WithFooter(strings.Repeat("f", 61)), "interactive.footer.text"},
		"long header":                    {buttons.WithHeader(strings.Repeat("h", 61), "", nil), "interactive.header.text"},
		"both":                           {buttons.WithHeader("t", cloudapi.KindImage, img), "interactive.header"},
		"sticker header":                 {buttons.WithHeader("", cloudapi.KindSticker, img), "interactive.header.type"},
		"text with footer":               {cloudapi.Text(alice, "hi").WithFooter("f"), "interactive.footer"},
	} {
		err := tc.m.Validate()
		var ve *cloudapi.ValidationError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.field != "" && (!errors.As(err, &ve) || ve.Field != tc.field):
			t.Errorf("%s: Validate = %v, want field %s", name, err, tc.field)
		}
	}
}

// Issue 12 section 5: media upload, URL retrieval and download, with the
// token sent only to Meta.
func TestMediaRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		content := []byte("%PDF-1.7 invoice")
		id, err := h.c.UploadMedia(t.Context(), number, "invoice.pdf", "application/pdf", bytes.NewReader(content))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.c.Send(t.Context(), number, cloudapi.Document(alice, cloudapi.Media{ID: id, Filename: "invoice.pdf"})); err != nil {
			t.Fatal(err)
		}
		info, err := h.c.GetMedia(t.Context(), id)
		if err != nil || info.ID != id || info.MIMEType != "application/pdf" || info.FileSize.String() != fmt.Sprint(len(content)) {
			t.Fatalf("GetMedia = %+v, %v", info, err)
		}
		var got bytes.Buffer
		if n, err := h.c.DownloadMedia(t.Context(), info.URL, &got); err != nil || n != int64(len(content)) || !bytes.Equal(got.Bytes(), content) {
			t.Fatalf("DownloadMedia = %d, %v: %q", n, err, got.Bytes())
		}
		for _, u := range []string{"https://evil.example/x", "http://lookaside.fbsbx.com/x", "https://fbsbx.com.evil.example/x", "file:///etc/passwd"} {
			if _, err := h.c.DownloadMedia(t.Context(), u, io.Discard); !errors.As(err, new(*cloudapi.ValidationError)) {
				t.Errorf("DownloadMedia(%s) = %v, want refused", u, err)
			}
		}
		if _, err := h.c.GetMedia(t.Context(), "42"); !errors.As(err, new(*errcodes.Error)) {
			t.Errorf("unknown media: %v", err)
		}
		if _, err := h.c.UploadMedia(t.Context(), number, "a.png", "", bytes.NewReader(content)); !errors.As(err, new(*cloudapi.ValidationError)) {
			t.Errorf("upload without type: %v", err)
		}
	})
}

// Forget lets a queue resend a key it reconciled as not delivered.
func TestForgetAllowsAResend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.srv.Script(cloudapitest.Failure{Reset: true})
		m := withKey(cloudapi.Text(alice, "x"), "k-forget")
		if _, err := h.c.Send(t.Context(), number, m); !errors.Is(err, cloudapi.ErrSubmittedUnknown) {
			t.Fatal(err)
		}
		if _, err := h.c.Send(t.Context(), number, m); !errors.Is(err, cloudapi.ErrDuplicate) {
			t.Fatalf("second send: %v", err)
		}
		h.c.Forget("k-forget")
		time.Sleep(time.Minute)
		if _, err := h.c.Send(t.Context(), number, m); err != nil {
			t.Errorf("send after Forget: %v", err)
		}
	})
}

// Whatever a caller puts in a template, Validate never panics, and a
// message it accepts encodes to JSON that keeps every value as given.
func FuzzTemplateValidate(f *testing.F) {
	f.Add("Ada", `{"fallback_value":"Monday"}`, "25OFF", "first_name")
	f.Add("\xff", `{"fallback_value":`, "", "Bad Name")
	f.Fuzz(func(t *testing.T, text, dateTime, coupon, name string) {
		m := cloudapi.Template(alice, "t", "en",
			cloudapi.Header(cloudapi.TextParam(text)),
			cloudapi.Body(cloudapi.Parameter{Type: "date_time", DateTime: json.RawMessage(dateTime)}, cloudapi.NamedTextParam(name, text)),
			cloudapi.CopyCodeButton(0, coupon))
		if err := m.Validate(); err != nil {
			if !errors.As(err, new(*cloudapi.ValidationError)) {
				t.Fatalf("Validate = %v, not a ValidationError", err)
			}
			return
		}
		if !json.Valid([]byte(dateTime)) {
			t.Fatalf("accepted a date_time that is not JSON: %q", dateTime)
		}
	})
}

// A context that ended before the send sends nothing.
func TestCancelledContextSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		m := withKey(cloudapi.Text(alice, "x"), "k-cancel")
		_, err := h.c.Send(ctx, number, m)
		if cloudapi.StateOf(err) != cloudapi.StateNotSubmitted || !errors.Is(err, context.Canceled) || len(h.srv.Requests()) != 0 {
			t.Fatalf("Send = %v (%v), %d requests", err, cloudapi.StateOf(err), len(h.srv.Requests()))
		}
		if _, err := h.c.Send(t.Context(), number, m); err != nil {
			t.Errorf("the key of a message never sent was kept: %v", err)
		}
	})
}

// The call budget holds sends only after Meta refused a call (4, 613,
// 80007, 80008), never because of a usage header about management calls.
func TestBudgetHoldsOnlyAfterARefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		start := time.Now()
		h.srv.FailNext(errcodes.GraphRateLimit)
		res, err := h.c.Send(t.Context(), number, cloudapi.Text(alice, "x"))
		if err != nil || res.Attempts != 2 || res.SentAt.Sub(start) != time.Minute {
			t.Fatalf("613: %+v %v, want accepted after the 1 min hold", res, err)
		}
	})
}

// spendCounter counts the reservations and holds a pair limiter asks of
// its store: a Send that spends nothing asks none.
type spendCounter struct {
	pairstore.Store
	n atomic.Int64
}

func (s *spendCounter) Reserve(ctx context.Context, p pairstore.Pair, t time.Time, cost, maxWait time.Duration) (pairstore.Ticket, bool, error) {
	s.n.Add(1)
	return s.Store.Reserve(ctx, p, t, cost, maxWait)
}

func (s *spendCounter) Refuse(ctx context.Context, p pairstore.Pair, t time.Time, holds []time.Duration, memory time.Duration) (time.Duration, error) {
	s.n.Add(1)
	return s.Store.Refuse(ctx, p, t, holds, memory)
}
