package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wapace runs the command line and returns its exit status and output.
func wapace(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsageExitCodes(t *testing.T) {
	t.Setenv("WAPACE_DB", "")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 2},
		{[]string{"bogus"}, 2},
		{[]string{"-h"}, 0},
		{[]string{"outbox"}, 2},
		{[]string{"outbox", "bogus"}, 2},
		{[]string{"outbox", "stats", "-h"}, 0},
		{[]string{"outbox", "list", "-h"}, 0},
		{[]string{"outbox", "show", "-h"}, 0},
		{[]string{"outbox", "requeue", "-h"}, 0},
		{[]string{"outbox", "expire", "-h"}, 0},
		{[]string{"outbox", "stats"}, 2},                   // no -db
		{[]string{"outbox", "stats", "-bogus"}, 2},         // unknown flag
		{[]string{"outbox", "list", "-state", "weird"}, 2}, // bad state
		{[]string{"outbox", "show", "-db", "sqlite:/nonexistent/x.db"}, 2},
		{[]string{"outbox", "show", "-db", "sqlite:/nonexistent/x.db", "K"}, 1},
		{[]string{"outbox", "requeue", "-db", "sqlite:/x.db", "K"}, 2}, // no -reason
		{[]string{"replay", "-h"}, 0},
		{[]string{"replay"}, 2},
		{[]string{"replay", "/nonexistent.log"}, 1},
		{[]string{"fakemeta", "-h"}, 0},
		{[]string{"fakemeta", "-bogus"}, 2},
		{[]string{"console", "-h"}, 0},
		{[]string{"console", "-db", "sqlite:/x.db"}, 2}, // no token
	} {
		if code, _, stderr := wapace(t, tc.args...); code != tc.want {
			t.Errorf("wapace %s: exit %d, want %d (stderr %q)", strings.Join(tc.args, " "), code, tc.want, stderr)
		}
	}
}

// seedOutbox makes an outbox with a dead letter (131049), an unknown
// outcome (131000), an accepted item and a queued one.
func seedOutbox(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "o.db")
	dsn := "sqlite:" + path
	meta := cloudapitest.NewServer(t)
	c, err := cloudapi.New("SEED_TOKEN_never_printed", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		t.Fatal(err)
	}
	o, err := outbox.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	enqueue := func(key, to string) {
		m := cloudapi.Text(to, "hi")
		m.IdempotencyKey = key
		if _, err := o.Enqueue(ctx, "106540352242922", m); err != nil {
			t.Fatal(err)
		}
	}
	meta.FailNextFor("+237690000001", errcodes.Code(131049))
	meta.FailNextFor("+237690000002", errcodes.Code(131000))
	enqueue("dead-1", "+237690000001")
	enqueue("unknown-1", "+237690000002")
	enqueue("ok-1", "+237690000003")
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- o.Run(rctx, c) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := 0
		for _, k := range []string{"dead-1", "unknown-1", "ok-1"} {
			if it, err := o.Get(ctx, k); err == nil && it.State.Final() {
				n++
			}
		}
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("seed not final within 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	<-done
	enqueue("queued-1", "+237690000004")
	return dsn
}

func TestOutboxCommands(t *testing.T) {
	dsn := seedOutbox(t)

	code, out, _ := wapace(t, "outbox", "stats", "-db", dsn, "-json")
	var snap struct {
		Counts      map[string]int `json:"counts"`
		DeadLetters int            `json:"dead_letters"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &snap) != nil {
		t.Fatalf("stats -json: %d %q", code, out)
	}
	if snap.Counts["failed"] != 1 || snap.Counts["submitted_unknown"] != 1 || snap.Counts["queued"] != 1 || snap.DeadLetters != 1 {
		t.Errorf("stats %+v", snap)
	}
	if code, out, _ := wapace(t, "outbox", "stats", "-db", dsn); code != 0 || !strings.Contains(out, "dead letters") {
		t.Errorf("stats: %d %q", code, out)
	}

	code, out, _ = wapace(t, "outbox", "list", "-db", dsn, "-state", "dead")
	if code != 0 || !strings.Contains(out, "dead-1") || strings.Contains(out, "unknown-1") || !strings.Contains(out, "131049") {
		t.Errorf("list -state dead: %d\n%s", code, out)
	}
	if strings.Contains(out, "237690000001") {
		t.Errorf("list shows a phone number unmasked:\n%s", out)
	}
	if _, out, _ := wapace(t, "outbox", "list", "-db", dsn, "-state", "dead", "-show-numbers"); !strings.Contains(out, "237690000001") {
		t.Errorf("list -show-numbers:\n%s", out)
	}
	if _, out, _ := wapace(t, "outbox", "list", "-db", dsn, "-state", "unknown"); !strings.Contains(out, "unknown-1") || strings.Contains(out, "dead-1") {
		t.Errorf("list -state unknown:\n%s", out)
	}
	if _, out, _ := wapace(t, "outbox", "list", "-db", dsn, "-state", "queued", "-json"); strings.Count(out, "\n") != 1 || !strings.Contains(out, `"key":"queued-1"`) {
		t.Errorf("list -state queued -json:\n%s", out)
	}

	code, out, _ = wapace(t, "outbox", "show", "-db", dsn, "dead-1")
	if code != 0 || !strings.Contains(out, "history:") || !strings.Contains(out, "sending") || !strings.Contains(out, "failed") {
		t.Errorf("show: %d\n%s", code, out)
	}
	if code, _, stderr := wapace(t, "outbox", "show", "-db", dsn, "nope"); code != 1 || !strings.Contains(stderr, "no such item") {
		t.Errorf("show of a missing key: %d %q", code, stderr)
	}

	// requeue: refused for an unknown outcome without -force.
	code, _, stderr := wapace(t, "outbox", "requeue", "-db", dsn, "-reason", "retry", "unknown-1")
	if code != 1 || !strings.Contains(stderr, "may have been sent") || !strings.Contains(stderr, "-force") {
		t.Errorf("requeue of an unknown outcome: %d %q", code, stderr)
	}
	if code, out, _ := wapace(t, "outbox", "requeue", "-db", dsn, "-reason", "checked with Meta", "-force", "unknown-1"); code != 0 || !strings.Contains(out, "requeued") {
		t.Errorf("forced requeue: %d %q", code, out)
	}
	if code, _, _ := wapace(t, "outbox", "requeue", "-db", dsn, "-reason", "template fixed", "dead-1"); code != 0 {
		t.Errorf("requeue of a dead letter: %d", code)
	}
	_, out, _ = wapace(t, "outbox", "show", "-db", dsn, "-json", "dead-1")
	var it itemJSON
	if err := json.Unmarshal([]byte(out), &it); err != nil || it.State != "queued" || it.History[len(it.History)-1].Reason != "requeued by operator: template fixed" {
		t.Errorf("dead-1 after requeue: %+v %v", it, err)
	}
	if code, _, stderr := wapace(t, "outbox", "requeue", "-db", dsn, "-reason", "again", "dead-1"); code != 1 || !strings.Contains(stderr, "queued") {
		t.Errorf("requeue of a queued item: %d %q", code, stderr)
	}

	if code, out, _ := wapace(t, "outbox", "expire", "-db", dsn, "-reason", "campaign cancelled", "queued-1"); code != 0 || !strings.Contains(out, "expired") {
		t.Errorf("expire: %d %q", code, out)
	}
	if code, _, _ := wapace(t, "outbox", "expire", "-db", dsn, "-reason", "x", "ok-1"); code != 1 {
		t.Errorf("expire of an accepted item: %d", code)
	}
}

// syncBuffer is a buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestConsoleServes(t *testing.T) {
	dsn := seedOutbox(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	ctx, stop := context.WithCancel(t.Context())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"console", "-db", dsn, "-addr", "127.0.0.1:0", "-token-file", tokenFile}, &out, &errb)
	}()
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; {
		if i := strings.Index(out.String(), "http://"); i >= 0 {
			base = strings.Fields(out.String()[i:])[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("console did not start: %q %q", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	if strings.Contains(out.String(), token) || strings.Contains(errb.String(), token) {
		t.Error("the console printed its token")
	}
	req, _ := http.NewRequest("GET", strings.TrimSuffix(base, "/")+"/", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "dead-1") {
		t.Errorf("console: %d", resp.StatusCode)
	}
	stop()
	if code := <-done; code != 0 {
		t.Errorf("console exit %d: %s", code, errb.String())
	}
}

func TestReplay(t *testing.T) {
	// A 20-bubble burst the pair rule accepts, then a message 100 s later
	// while the pair still owes 20 s: its 131056 is explained.
	var b strings.Builder
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 20 {
		fmt.Fprintf(&b, `{"msg":"wapace attempt","at":%q,"pair":"p1","to":"2376*****001","state":"accepted","key":"k%d"}`+"\n",
			t0.Add(time.Duration(i)*10*time.Millisecond).Format(time.RFC3339Nano), i)
	}
	fmt.Fprintf(&b, `{"msg":"wapace attempt","at":%q,"pair":"p1","to":"2376*****001","state":"refused","code":131056,"key":"victim"}`+"\n",
		t0.Add(100*time.Second).Format(time.RFC3339Nano))
	fmt.Fprintf(&b, `{"msg":"something else"}`+"\n")
	path := filepath.Join(t.TempDir(), "sends.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := wapace(t, "replay", path)
	if code != 0 || !strings.Contains(out, "victim of a burst of 20") || !strings.Contains(out, "21 attempts read, 1 pairs, 1 131056 explained") {
		t.Errorf("replay: %d\n%s", code, out)
	}
	if err := os.WriteFile(path, []byte("not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := wapace(t, "replay", path); code != 1 || !strings.Contains(stderr, "line 1") {
		t.Errorf("replay of a bad log: %d %q", code, stderr)
	}
}

func TestConsoleToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	tok, err := consoleToken(path)
	if err != nil || len(tok) < 32 {
		t.Fatalf("made-up token %q, %v", tok, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, %v", fi.Mode(), err)
	}
	if again, _ := consoleToken(path); again != tok {
		t.Error("the token file was not reused")
	}
	if _, err := listen("0.0.0.0:0", false); err == nil {
		t.Error("a non-loopback address was accepted without -allow-remote")
	}
	ln, err := listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

func TestFakemetaServes(t *testing.T) {
	ctx, stop := context.WithCancel(t.Context())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"fakemeta", "-addr", "127.0.0.1:0", "-token", "FAKE_TOKEN_abc"}, &out, &errb)
	}()
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; {
		if i := strings.Index(out.String(), "http://"); i >= 0 {
			base = strings.Fields(out.String()[i:])[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fakemeta did not start: %q %q", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(base + "/_fake/stats")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("stats: %d", resp.StatusCode)
	}
	stop()
	if code := <-done; code != 0 {
		t.Errorf("fakemeta exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String()+errb.String(), "FAKE_TOKEN_abc") {
		t.Error("fakemeta printed its token")
	}
}
