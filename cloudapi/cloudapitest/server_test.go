package cloudapitest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// post sends one raw message request and returns the status and the error
// code (or 0 with the wamid).
func post(t *testing.T, c *http.Client, base, from, to, typ string) (int, errcodes.Code, string) {
	t.Helper()
	obj := `{"body":"x"}`
	if typ == "template" {
		obj = `{"name":"t","language":{"code":"en"}}`
	}
	body := fmt.Sprintf(`{"messaging_product":"whatsapp","to":%q,"type":%q,%q:%s}`, to, typ, typ, obj)
	req, _ := http.NewRequest(http.MethodPost, base+"/v23.0/"+from+"/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		var ok struct {
			Messages []struct{ ID string } `json:"messages"`
		}
		json.Unmarshal(data, &ok)
		return resp.StatusCode, 0, ok.Messages[0].ID
	}
	e, err := errcodes.Parse(resp.StatusCode, data)
	if err != nil {
		t.Fatalf("error body is not Meta's: %s", data)
	}
	return resp.StatusCode, e.Code, ""
}

func TestPairRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t)
		c := srv.Client()
		// A burst of 20 is accepted; the next message inside the debt is refused.
		for i := range 20 {
			if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237690000001", "text"); code != 0 {
				t.Fatalf("burst message %d refused with %d", i, code)
			}
		}
		time.Sleep(100 * time.Second)
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "+237 690 00 00 01", "text"); code != errcodes.PairRateLimit {
			t.Errorf("message inside the debt: code %d, want 131056", code)
		}
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237690000002", "text"); code != 0 {
			t.Errorf("another recipient refused with %d", code)
		}
		time.Sleep(20 * time.Second)
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237690000001", "text"); code != 0 {
			t.Errorf("message after the debt refused with %d", code)
		}
		if srv.Count(errcodes.PairRateLimit) != 1 || srv.Accepted() != 22 {
			t.Errorf("count %d accepted %d", srv.Count(errcodes.PairRateLimit), srv.Accepted())
		}
	})
}

func TestThroughputWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t, cloudapitest.WithThroughput(5), cloudapitest.WithNumberThroughput("2", 1))
		c := srv.Client()
		for i := range 6 {
			_, code, _ := post(t, c, cloudapitest.BaseURL, "1", fmt.Sprintf("2376900000%02d", i), "text")
			if want := errcodes.Code(0); i == 5 {
				if code != errcodes.ThroughputLimit {
					t.Errorf("6th message in a second: %d, want 130429", code)
				}
			} else if code != want {
				t.Errorf("message %d refused with %d", i, code)
			}
		}
		// The window is closed: one second later the first send still counts.
		time.Sleep(time.Second)
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237691000000", "text"); code != errcodes.ThroughputLimit {
			t.Errorf("at +1s: %d, want 130429 (closed window)", code)
		}
		time.Sleep(time.Nanosecond)
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237691000000", "text"); code != 0 {
			t.Errorf("after the window: %d", code)
		}
		post(t, c, cloudapitest.BaseURL, "2", "237692000000", "text")
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "2", "237692000001", "text"); code != errcodes.ThroughputLimit {
			t.Errorf("per-number override ignored: %d", code)
		}
	})
}

func TestTierAndScripts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t, cloudapitest.WithTier(1, 0))
		c := srv.Client()
		post(t, c, cloudapitest.BaseURL, "1", "237690000001", "template")
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237690000002", "template"); code != errcodes.BusinessRateLimit {
			t.Errorf("2nd unique template recipient: %d", code)
		}
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237690000002", "text"); code != 0 {
			t.Errorf("free-form text counted toward the tier: %d", code)
		}
		srv.FailNextFor("+237 690 00 00 09", errcodes.MarketingLimit)
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237690000003", "text"); code != 0 {
			t.Errorf("script for another recipient applied: %d", code)
		}
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237690000009", "text"); code != errcodes.MarketingLimit {
			t.Errorf("scripted failure: %d", code)
		}
		srv.Maintenance("1", time.Now().Add(time.Minute))
		if _, code, _ := post(t, c, cloudapitest.BaseURL, "1", "237690000004", "text"); code != errcodes.Maintenance {
			t.Errorf("maintenance: %d", code)
		}
		srv.Script(cloudapitest.Failure{Reset: true})
		body := `{"messaging_product":"whatsapp","to":"237690000005","type":"text","text":{"body":"x"}}`
		req, _ := http.NewRequest(http.MethodPost, cloudapitest.BaseURL+"/v23.0/2/messages", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		if _, err := c.Do(req); !errors.Is(err, cloudapitest.ErrReset) {
			t.Errorf("reset: %v", err)
		}
		reqs := srv.Requests()
		if last := reqs[len(reqs)-1]; !last.Accepted || last.Status != 0 || last.To != "237690000005" {
			t.Errorf("reset request recorded as %+v", last)
		}
	})
}

func TestRejectsBadRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t, cloudapitest.WithToken("right"))
		c := srv.Client()
		do := func(method, path, auth, body string) (int, errcodes.Code) {
			req, _ := http.NewRequest(method, cloudapitest.BaseURL+path, strings.NewReader(body))
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			e, err := errcodes.Parse(resp.StatusCode, data)
			if err != nil {
				return resp.StatusCode, -1
			}
			return resp.StatusCode, e.Code
		}
		ok := `{"messaging_product":"whatsapp","to":"237690000001","type":"text","text":{"body":"x"}}`
		for _, tc := range []struct {
			method, path, auth, body string
			status                   int
			code                     errcodes.Code
		}{
			{"POST", "/v23.0/1/messages", "", ok, 401, 104}, // Meta: an access token is required
			{"POST", "/v23.0/1/messages", "Bearer wrong", ok, 401, errcodes.AccessTokenExpired},
			{"GET", "/v23.0/1/messages", "Bearer right", "", 400, errcodes.InvalidParameter},
			{"POST", "/v23.0/abc/messages", "Bearer right", ok, 400, errcodes.InvalidParameter},
			{"POST", "/v23.0/1/messages", "Bearer right", "nope", 400, errcodes.InvalidParameter},
			{"POST", "/v23.0/1/messages", "Bearer right", `{"to":"237690000001"}`, 400, errcodes.MissingParameter},
			{"POST", "/v23.0/1/messages", "Bearer right", `{"messaging_product":"whatsapp","to":"12","type":"text","text":{}}`, 400, errcodes.InvalidParameterValue},
			{"POST", "/v23.0/1/messages", "Bearer right", `{"messaging_product":"whatsapp","status":"read"}`, 400, errcodes.MissingParameter},
		} {
			if status, code := do(tc.method, tc.path, tc.auth, tc.body); status != tc.status || code != tc.code {
				t.Errorf("%s %s %q: %d %d, want %d %d", tc.method, tc.path, tc.body, status, code, tc.status, tc.code)
			}
		}
		if status, _ := do("POST", "/v23.0/1/messages", "Bearer right", `{"messaging_product":"whatsapp","status":"read","message_id":"wamid.X"}`); status != 200 {
			t.Errorf("read receipt: %d", status)
		}
	})
}

func TestRealSocket(t *testing.T) {
	srv := cloudapitest.NewServer(t)
	resp, err := http.Post(srv.URL()+"/v23.0/1/messages", "application/json",
		bytes.NewReader([]byte(`{"messaging_product":"whatsapp","to":"237690000001","type":"text","text":{"body":"x"}}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token over the socket: %d", resp.StatusCode)
	}
	if _, code, id := post(t, http.DefaultClient, srv.URL(), "1", "237690000001", "text"); code != 0 || id == "" {
		t.Errorf("over the socket: %d %q", code, id)
	}
	srv.Script(cloudapitest.Failure{Reset: true})
	req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/v23.0/1/messages",
		strings.NewReader(`{"messaging_product":"whatsapp","to":"237690000002","type":"text","text":{"body":"x"}}`))
	req.Header.Set("Authorization", "Bearer tok")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Error("a reset over the socket returned a response")
	}
	srv.Close()
	http.DefaultClient.CloseIdleConnections()
}

func TestSignatureHeaderVerifies(t *testing.T) {
	t.Parallel()
	body := []byte(`{"object":"whatsapp_business_account","entry":[]}`)
	h := cloudapitest.Sign(body, "app-secret")
	if !strings.HasPrefix(h, "sha256=") || len(h) != len("sha256=")+64 {
		t.Fatalf("header %q", h)
	}
	if err := cloudapi.VerifySignature(body, h, "app-secret"); err != nil {
		t.Errorf("VerifySignature = %v", err)
	}
	if err := cloudapi.VerifySignature(body, h, "other"); err == nil {
		t.Error("verified with the wrong secret")
	}
}

// The zero Failure is a bare 500, never a panic; Nth fails one request of
// several; Stall never delivers the request.
func TestFailureFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t)
		c := srv.Client()
		srv.Script(cloudapitest.Failure{})
		body := `{"messaging_product":"whatsapp","to":"237690000001","type":"text","text":{"body":"x"}}`
		do := func() (*http.Response, error) {
			req, _ := http.NewRequest(http.MethodPost, cloudapitest.BaseURL+"/v26.0/1/messages", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer tok")
			return c.Do(req)
		}
		resp, err := do()
		if err != nil || resp.StatusCode != 500 {
			t.Fatalf("zero Failure: %v %v", resp, err)
		}
		resp.Body.Close()
		srv.Script(cloudapitest.Failure{To: "+237 690 00 00 02", Code: errcodes.PairRateLimit, Nth: 2})
		for i, want := range []bool{true, false, true} {
			time.Sleep(time.Minute)
			b := strings.Replace(body, "237690000001", "237690000002", 1)
			req, _ := http.NewRequest(http.MethodPost, cloudapitest.BaseURL+"/v26.0/1/messages", strings.NewReader(b))
			req.Header.Set("Authorization", "Bearer tok")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.StatusCode == 200; got != want {
				t.Errorf("request %d: status %d", i+1, resp.StatusCode)
			}
		}
		srv.Script(cloudapitest.Failure{Stall: true})
		n := len(srv.Requests())
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, cloudapitest.BaseURL+"/v26.0/1/messages", strings.NewReader(body))
		if _, err := c.Do(req); !errors.Is(err, context.DeadlineExceeded) || len(srv.Requests()) != n {
			t.Errorf("stall: %v, %d requests recorded", err, len(srv.Requests())-n)
		}
	})
}

// The fake checks each message type with its own reading of Meta's rules.
func TestFakeChecksContent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t)
		c := srv.Client()
		for i, tc := range []struct {
			typ, obj string
			ok       bool
		}{
			{"text", `{"body":"hi"}`, true},
			{"text", `{"body":""}`, false},
			{"audio", `{"id":"1","voice":true}`, true},
			{"image", `{"id":"1","voice":true}`, false},
			{"image", `{"id":"1","link":"https://x"}`, false},
			{"interactive", `{"type":"cta_url","body":{"text":"b"},"action":{"name":"cta_url"}}`, true},
			{"interactive", `{"type":"nope","body":{"text":"b"},"action":{}}`, false},
			{"contacts", `[{"name":{"formatted_name":"Ada"}}]`, true},
			{"contacts", `[]`, false},
			{"template", `{"name":"t"}`, false},
		} {
			to := fmt.Sprintf("2376900001%02d", i)
			body := fmt.Sprintf(`{"messaging_product":"whatsapp","to":%q,"type":%q,%q:%s}`, to, tc.typ, tc.typ, tc.obj)
			req, _ := http.NewRequest(http.MethodPost, cloudapitest.BaseURL+"/v26.0/1/messages", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer tok")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.StatusCode == 200; got != tc.ok {
				t.Errorf("%s %s: status %d", tc.typ, tc.obj, resp.StatusCode)
			}
		}
	})
}

// slowBody yields its bytes only after a delay: a client that flushed the
// headers and sends the body later (net/http does so for a body of a type
// it does not know).
type slowBody struct {
	delay time.Duration
	r     *strings.Reader
	slept bool
}

func (b *slowBody) Read(p []byte) (int, error) {
	if !b.slept {
		time.Sleep(b.delay)
		b.slept = true
	}
	return b.r.Read(p)
}

// TestThroughputCountsArrivalOfTheBody: over a real socket, a request
// counts when its body has arrived, not when its headers did. A's headers
// come first (net/http flushes them before a body of a type it does not
// know), then B whole 0.5 s later, then A's body 2 s after its headers: the
// closed one-second window ending at A's body no longer holds B, so A is
// accepted at one message a second. Stamped at its headers, A was judged in
// a window holding B, sent after it, and refused.
func TestThroughputCountsArrivalOfTheBody(t *testing.T) {
	srv := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1))
	base := srv.URL()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	body := `{"messaging_product":"whatsapp","to":"237690000001","type":"text","text":{"body":"x"}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/v23.0/1/messages",
		&slowBody{delay: 2 * time.Second, r: strings.NewReader(body)})
	req.ContentLength = int64(len(body))
	req.Header.Set("Authorization", "Bearer tok")
	codeA := make(chan int, 1)
	go func() {
		resp, err := c.Do(req)
		if err != nil {
			t.Error(err)
			codeA <- 0
			return
		}
		resp.Body.Close()
		codeA <- resp.StatusCode
	}()
	time.Sleep(500 * time.Millisecond)
	if _, code, _ := post(t, c, base, "1", "237690000002", "text"); code != 0 {
		t.Fatalf("B refused with %d", code)
	}
	if st := <-codeA; st != http.StatusOK {
		t.Errorf("A, whose body arrived 1.5 s after B: status %d, want 200", st)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !reqs[0].At.Before(reqs[1].At) || reqs[1].At.Sub(reqs[0].At) < time.Second {
		var got []string
		for _, r := range reqs {
			got = append(got, fmt.Sprintf("%s at %s code %d", r.To, r.At.Format("15:04:05.000"), r.Code))
		}
		t.Fatalf("requests %q: want B, then A more than a second later, in the order of their bodies", got)
	}
}

// TestThroughputJudgesInstantsOutOfOrder: with WithArrival, instants may
// come in another order than the requests are handled in; the rule is
// applied to the instants. At one message a second, 1.5 s then 0.2 s are
// both within the figure (no closed second holds both); 1.1 s then shares
// a second with 0.2 s and is refused, 2.3 s with 1.5 s; 2.6 s is alone.
func TestThroughputJudgesInstantsOutOfOrder(t *testing.T) {
	base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	srv := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1),
		cloudapitest.WithArrival(func(r *http.Request) time.Time {
			ms, err := strconv.Atoi(r.Header.Get("X-Test-Arrival-Ms"))
			if err != nil {
				return time.Time{}
			}
			return base.Add(time.Duration(ms) * time.Millisecond)
		}))
	c := srv.Client()
	for i, tc := range []struct {
		ms   int
		want errcodes.Code
	}{{1500, 0}, {200, 0}, {1100, errcodes.ThroughputLimit}, {2300, errcodes.ThroughputLimit}, {2600, 0}} {
		body := fmt.Sprintf(`{"messaging_product":"whatsapp","to":"2376900000%02d","type":"text","text":{"body":"x"}}`, i)
		req, _ := http.NewRequest(http.MethodPost, cloudapitest.BaseURL+"/v23.0/1/messages", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("X-Test-Arrival-Ms", strconv.Itoa(tc.ms))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var code errcodes.Code
		if resp.StatusCode != http.StatusOK {
			e, err := errcodes.Parse(resp.StatusCode, data)
			if err != nil {
				t.Fatalf("error body is not Meta's: %s", data)
			}
			code = e.Code
		}
		if code != tc.want {
			t.Errorf("arrival at +%d ms: code %d, want %d", tc.ms, code, tc.want)
		}
	}
}
