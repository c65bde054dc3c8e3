package fakemeta

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/webhook"
	"go.uber.org/goleak"
)

// start runs the command on a free loopback port and returns its URL.
func start(t *testing.T, args ...string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "addr")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() { done <- Run(ctx, append(args, "-addr-file", file), &syncWriter{w: &out}, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	for range 500 {
		if b, err := os.ReadFile(file); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("wapace-fakemeta did not start")
	return ""
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func post(t *testing.T, url, to, key string) int {
	t.Helper()
	body := `{"messaging_product":"whatsapp","to":"` + to + `","type":"text","text":{"body":"hi"},"biz_opaque_callback_data":"` + key + `"}`
	req, _ := http.NewRequest(http.MethodPost, url+"/v23.0/106540352242922/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer T")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

func stats(t *testing.T, url string) Stats {
	t.Helper()
	resp, err := http.Get(url + "/_fake/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s Stats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStatsCountRefusalsAndDuplicates(t *testing.T) {
	url := start(t, "-fail", "130429@237690000002", "-fail", "131049@237690000009")
	codes := []int{
		post(t, url, "237690000001", "k1"),
		post(t, url, "237690000001", "k2"), // same pair at once: joins the burst
		post(t, url, "237690000002", "k1"), // scripted 130429
		post(t, url, "237690000009", "k3"), // scripted 131049
	}
	if diff := cmp.Diff([]int{200, 200, 400, 400}, codes); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	s := stats(t, url)
	want := Stats{Requests: 4, Accepted: 2,
		Refusals: map[string]int{"130429": 1, "131049": 1},
		ByKey:    map[string]int{"k1": 1, "k2": 1}}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	if c := post(t, url, "237690000003", "k1"); c != 200 {
		t.Fatalf("status %d", c)
	}
	if s := stats(t, url); s.Duplicates != 1 || s.ByKey["k1"] != 2 {
		t.Errorf("duplicates %d, k1 accepted %d times; want 1 and 2", s.Duplicates, s.ByKey["k1"])
	}
}

func TestClientAgainstCommand(t *testing.T) {
	url := start(t, "-fail", "130429")
	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(url))
	if err != nil {
		t.Fatal(err)
	}
	m := cloudapi.Text("+237 690 00 00 01", "hi")
	m.IdempotencyKey = "order-1"
	res, err := c.Send(t.Context(), "106540352242922", m)
	if err != nil {
		t.Fatal(err)
	}
	s := stats(t, url)
	if res.Attempts != 2 || s.Refusals["130429"] != 1 || s.ByKey["order-1"] != 1 || s.Duplicates != 0 {
		t.Errorf("attempts %d, stats %+v", res.Attempts, s)
	}
}

func TestRuntimeFailureAndReset(t *testing.T) {
	url := start(t)
	resp, err := http.Post(url+"/_fake/fail", "application/json", strings.NewReader(`{"reset":true}`))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("scripting a reset: %v %v", err, resp)
	}
	resp.Body.Close()
	if c := post(t, url, "237690000001", "k1"); c != 0 {
		t.Errorf("a reset answered %d", c)
	}
	if s := stats(t, url); s.ByKey["k1"] != 1 || s.Accepted != 1 {
		t.Errorf("a reset message counts as accepted by the fake: %+v", s)
	}
}

func TestSignedWebhooks(t *testing.T) {
	hook, got := statusHook(t, func(s *webhook.Status) string { return s.Status + " " + s.CallbackData })
	url := start(t, "-app-secret", "SECRET", "-webhook", hook)
	post(t, url, "237690000001", "k1")
	waitWebhooks(t, url, 1)
	if diff := cmp.Diff([]string{"sent k1"}, got()); diff != "" {
		t.Errorf("webhooks (-want +got):\n%s", diff)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-mps", "0"}, {"-number-mps", "abc=3"}, {"-fail", "x"}, {"-maintenance", "1=-1s"},
		{"-webhook", "ftp://x"}, {"extra"}, {"-pair-burst", "0"}, {"-pair-interval", "0s"},
		{"-tier", "5", "-tier-code", "0"}, {"-tier", "5", "-tier-code", "-131064"},
		{"-template", "promo:en_US"}, {"-template", "::MARKETING"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// FuzzParseFailure: the -fail flag's parser never panics, and what it
// accepts is a code, a reset or a hang.
func FuzzParseFailure(f *testing.F) {
	for _, s := range []string{"131056", "reset@237690000001", "hang", "x", "@", "-1@2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fl, err := parseFailure(s)
		if err == nil && fl.Code <= 0 && !fl.Reset && !fl.Hang {
			t.Fatalf("%q accepted as %+v", s, fl)
		}
	})
}

// Run stops every goroutine it started (the server, the webhook sender)
// when its context ends.
func TestRunLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer hook.Close()
	file := filepath.Join(t.TempDir(), "addr")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, []string{"-addr-file", file, "-webhook", hook.URL}, io.Discard, io.Discard) }()
	var url string
	for range 500 {
		if b, err := os.ReadFile(file); err == nil && len(b) > 0 {
			url = strings.TrimSpace(string(b))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	tr := &http.Transport{}
	c := &http.Client{Transport: tr}
	body := `{"messaging_product":"whatsapp","to":"237690000001","type":"text","text":{"body":"hi"}}`
	req, _ := http.NewRequest(http.MethodPost, url+"/v23.0/106540352242922/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer T")
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
	}
	tr.CloseIdleConnections()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	hook.CloseClientConnections()
}

// statusHook starts a webhook receiver verifying the fake's signatures
// with the app secret "SECRET" and returns its URL and the statuses it has
// taken so far, each as line makes it.
func statusHook(t *testing.T, line func(*webhook.Status) string) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	h, err := webhook.NewHandler("SECRET", webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }), webhook.OnStatus(func(_ context.Context, _ webhook.Event, s *webhook.Status) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, line(s))
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	hook := httptest.NewServer(h)
	t.Cleanup(hook.Close)
	return hook.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// waitWebhooks waits up to 3 s for the fake at url to have sent n
// webhooks.
func waitWebhooks(t *testing.T, url string, n int) {
	t.Helper()
	for range 300 {
		if stats(t, url).Webhooks.Sent == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
