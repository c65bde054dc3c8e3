package outbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// TestMain runs the sender process of TestKill9 when asked to, and checks
// for leaked goroutines otherwise.
func TestMain(m *testing.M) {
	if os.Getenv("OUTBOX_TEST_SENDER") != "" {
		os.Exit(sender(os.Getenv("OUTBOX_TEST_DSN"), os.Getenv("OUTBOX_TEST_META")))
	}
	goleak.VerifyTestMain(m)
}

// sender is a real sender process: it dispatches the outbox at dsn to the
// fake Meta at base until nothing is left, then exits 0.
func sender(dsn, base string) int {
	ctx := context.Background()
	pairs := pairlimit.New(fastPairs)
	o, err := outbox.Open(ctx, dsn, outbox.WithPairLimiter(pairs), outbox.WithLease(300*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer o.Close()
	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(base), cloudapi.WithPairLimiter(pairs), cloudapi.WithThroughput(10000))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- o.Run(runCtx, c) }()
	for {
		select {
		case err := <-done:
			fmt.Fprintln(os.Stderr, "run:", err)
			return 3
		case <-time.After(20 * time.Millisecond):
		}
		st, err := o.Snapshot(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if st.Counts[outbox.StateQueued]+st.Counts[outbox.StateSending] == 0 {
			cancel()
			<-done
			return 0
		}
	}
}

// A real sender process dispatching a few thousand messages is killed with
// SIGKILL mid-run and restarted twice: afterwards every message is
// accepted exactly once or is submitted_unknown, none is accepted twice,
// FIFO order holds per recipient, and Meta never answered 131056.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sender processes")
	}
	if runtime.GOOS == "windows" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("needs processes and SIGKILL")
	}
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond), cloudapitest.WithThroughput(100000))
	base := meta.URL()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "outbox.db")
	const recipients, perRecipient = 300, 10
	o, err := outbox.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for j := range perRecipient {
		for r := range recipients {
			m := cloudapi.Text(recipient(r), "x")
			m.IdempotencyKey = fmt.Sprintf("r%03d-m%d", r, j)
			if _, err := o.Enqueue(t.Context(), from, m); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, m.IdempotencyKey)
		}
	}
	o.Close()
	total := recipients * perRecipient

	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "OUTBOX_TEST_SENDER=1", "OUTBOX_TEST_DSN="+dsn, "OUTBOX_TEST_META="+base)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	for round, at := range []int{total / 3, 2 * total / 3} {
		cmd := start()
		deadline := time.Now().Add(60 * time.Second)
		for meta.Accepted() < at && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
			t.Fatal(err)
		}
		_ = cmd.Wait()
		t.Logf("round %d: killed at %d accepted", round, meta.Accepted())
	}
	cmd := start()
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("last sender: %v", err)
		}
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		<-errc
		t.Fatal("last sender did not finish")
	}

	checkDelivery(t, meta, total, true)
	o, err = outbox.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	accepted := map[string]bool{}
	for _, r := range meta.Requests() {
		if r.Accepted {
			accepted[r.CallbackData] = true
		}
	}
	unknown := 0
	for _, k := range keys {
		it, err := o.Get(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		switch it.State {
		case outbox.StateAccepted:
			if !accepted[k] {
				t.Errorf("%s recorded accepted, not accepted by Meta", k)
			}
		case outbox.StateSubmittedUnknown:
			unknown++
		default:
			t.Errorf("%s: %v (%s)", k, it.State, it.Reason)
		}
	}
	t.Logf("%d messages: %d accepted, %d submitted_unknown, %d requests", total, len(accepted), unknown, len(meta.Requests()))
	if unknown > 2*outbox.DefaultConcurrency {
		t.Errorf("%d unknown: more than two kills can leave", unknown)
	}
}
