package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
)

const (
	from      = "106540352242922"
	token     = "EAAG-stdio-test-token-never-printed-0123456789"
	appSecret = "stdio-test-app-secret-never-printed"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine of exec and
// the test reading it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// build compiles this command once per test binary.
func build(t *testing.T) string {
	t.Helper()
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to build the server")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcpserver")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "mcpserver")
		if out, err := exec.Command(gotool, "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStdio starts the built server as a subprocess through the SDK's
// CommandTransport, against the fake Meta on a loopback socket, and drives
// it as an agent would: list the tools, send a burst to one user that
// forces a queue, and poll the status until everything is accepted.
func TestStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a subprocess for about 15 s")
	}
	bin := build(t)
	meta := cloudapitest.NewServer(t, cloudapitest.WithToken(token))
	cmd := exec.Command(bin, "-base-url", meta.URL(), "-from", from,
		"-outbox", "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"), "-accept-wait", "5s", "-webhook", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "WHATSAPP_TOKEN="+token, "WHATSAPP_APP_SECRET="+appSecret)
	var stderr syncBuffer
	cmd.Stderr = &stderr

	ctx := t.Context()
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if strings.Contains(stderr.String(), token) || strings.Contains(stderr.String(), token[10:30]) {
			t.Error("the server's stderr shows the token")
		}
		if strings.Contains(stderr.String(), appSecret) {
			t.Error("the server's stderr shows the app secret")
		}
	}()

	// The tools and their schemas.
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string][]string{}
	for _, tool := range lt.Tools {
		for _, s := range []struct {
			kind   string
			schema any
		}{{"in", tool.InputSchema}, {"out", tool.OutputSchema}} {
			b, _ := json.Marshal(s.schema)
			var sc struct {
				Type       string         `json:"type"`
				Properties map[string]any `json:"properties"`
			}
			if err := json.Unmarshal(b, &sc); err != nil || sc.Type != "object" {
				t.Fatalf("%s %s schema %s", tool.Name, s.kind, b)
			}
			for p := range sc.Properties {
				props[tool.Name+"."+s.kind] = append(props[tool.Name+"."+s.kind], p)
			}
		}
	}
	for key, want := range map[string][]string{
		"send_whatsapp_message.in":  {"to", "text", "idempotency_key", "max_delay_ms", "expires_at", "delivery"},
		"send_whatsapp_message.out": {"status", "message_id", "operation_id", "idempotency_key", "estimated_send_at", "retry_after_ms", "code", "meta_code", "retryable", "expires_at", "send_state"},
		"get_message_status.in":     {"operation_id", "idempotency_key"},
		"get_message_status.out":    {"status", "transitions"},
	} {
		for _, p := range want {
			if !slices.Contains(props[key], p) {
				t.Errorf("%s schema lacks %q (has %v)", key, p, props[key])
			}
		}
	}

	// A burst of three to one user: the pair rule lets one go now and
	// queues the others about 6 s apart.
	keys := []string{"burst-1", "burst-2", "burst-3"}
	for i, key := range keys {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_whatsapp_message", Arguments: map[string]any{
			"to": "+237 690 00 00 01", "text": "Step " + key, "idempotency_key": key, "max_delay_ms": 60000, "delivery": "async",
		}})
		if err != nil {
			t.Fatal(err)
		}
		got := structured(t, res)
		want := "queued"
		if i == 0 {
			want = "accepted"
		}
		if res.IsError || got["status"] != want || got["idempotency_key"] != key {
			t.Fatalf("send %d: %v, want status %s", i, got, want)
		}
		if want == "queued" && (got["retry_after_ms"] == nil || got["estimated_send_at"] == nil) {
			t.Errorf("queued result lacks its estimate: %v", got)
		}
	}
	if n := meta.Accepted(); n != 1 {
		t.Errorf("%d accepted before the queue drained, want 1", n)
	}

	// A one-time code that cannot wait for the pair is refused at once as a
	// tool error; a malformed call is a protocol error.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_whatsapp_message", Arguments: map[string]any{
		"to": "+237 690 00 00 01", "idempotency_key": "otp", "max_delay_ms": 2000,
		"template": map[string]any{"name": "login_code", "language": "en", "code": "482913"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := structured(t, res); !res.IsError || got["code"] != "WHATSAPP_BACKPRESSURE" || got["meta_code"] != 131056.0 ||
		got["retryable"] != true || got["send_state"] != "not_submitted" {
		t.Errorf("one-time code: %v", got)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_whatsapp_message", Arguments: map[string]any{
		"to": "+237 690 00 00 01", "text": "hi", "max_delay_ms": "soon",
	}}); err == nil || !strings.Contains(err.Error(), "max_delay_ms") {
		t.Errorf("malformed call: %v, want a protocol error naming max_delay_ms", err)
	}

	// Poll until every message is accepted.
	deadline := time.Now().Add(40 * time.Second)
	for _, key := range keys {
		for {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_message_status", Arguments: map[string]any{"operation_id": key}})
			if err != nil {
				t.Fatal(err)
			}
			got := structured(t, res)
			if got["status"] == "accepted" {
				break
			}
			if got["status"] != "queued" && got["status"] != "sending" || time.Now().After(deadline) {
				t.Fatalf("%s: %v", key, got)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// Each key reached Meta exactly once, never refused for the pair.
	byKey := map[string]int{}
	for _, r := range meta.Requests() {
		if r.Accepted {
			byKey[r.CallbackData]++
		}
	}
	for _, key := range keys {
		if byKey[key] != 1 {
			t.Errorf("%s accepted %d times, want 1", key, byKey[key])
		}
	}
	for _, r := range meta.Requests() {
		if r.CallbackData == "otp" {
			t.Error("the refused one-time code reached Meta")
		}
	}
	if n := meta.Count(131056); n != 0 {
		t.Errorf("%d x 131056", n)
	}

	// A delivery report posted to the server's webhook moves the first
	// message to delivered.
	hook := webhookURL(t, &stderr)
	var first cloudapitest.Request
	for _, r := range meta.Requests() {
		if r.CallbackData == keys[0] && r.Accepted {
			first = r
		}
	}
	body := meta.StatusBody(cloudapitest.Delivered(first))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(cloudapitest.SignatureHeader, cloudapitest.Sign(body, appSecret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("webhook answered %d", resp.StatusCode)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_message_status", Arguments: map[string]any{"idempotency_key": keys[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if got := structured(t, res); got["status"] != "delivered" || got["message_id"] != first.MessageID {
		t.Errorf("after the delivery report: %v", got)
	}
}

// webhookURL reads the address the server printed on stderr.
func webhookURL(t *testing.T, stderr *syncBuffer) string {
	t.Helper()
	const prefix = "webhook listening on "
	for range 100 {
		for line := range strings.Lines(stderr.String()) {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				return strings.TrimSpace(rest)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the server did not say where its webhook listens")
	return ""
}

// Bad configuration stops the server before it serves, with a message that
// names the problem and never the token.
func TestBadConfiguration(t *testing.T) {
	bin := build(t)
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"no token", []string{"-from", from}, nil, "WHATSAPP_TOKEN"},
		{"no sender", nil, []string{"WHATSAPP_TOKEN=" + token}, "-from"},
		{"bad sender", []string{"-from", "+237 690"}, []string{"WHATSAPP_TOKEN=" + token}, "invalid config"},
		{"window without webhook", []string{"-from", from, "-service-window"}, []string{"WHATSAPP_TOKEN=" + token}, "-webhook"},
		{"webhook without secret", []string{"-from", from, "-webhook", "127.0.0.1:0"}, []string{"WHATSAPP_TOKEN=" + token}, "WHATSAPP_APP_SECRET"},
		{"bad outbox", []string{"-from", from, "-outbox", "mysql://x"}, []string{"WHATSAPP_TOKEN=" + token}, "DSN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, tt.env...)
			cmd.Dir = t.TempDir()
			cmd.Stdin = strings.NewReader("")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("exited 0:\n%s", out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("output does not name %q:\n%s", tt.want, out)
			}
			if strings.Contains(string(out), token) {
				t.Errorf("output shows the token:\n%s", out)
			}
		})
	}
}
