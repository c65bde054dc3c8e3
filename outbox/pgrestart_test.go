package outbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// pgCtl returns the command that runs pg_ctl with args on the cluster of
// .ci/postgres.sh (PG_DIR, PG_USER), as its owner. Without that cluster
// the test skips, or fails under WAPACE_REQUIRE_SERVICES=1.
func pgCtl(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	dir, user := os.Getenv("PG_DIR"), os.Getenv("PG_USER")
	if dir == "" || user == "" {
		if os.Getenv("WAPACE_REQUIRE_SERVICES") == "1" {
			t.Fatal("PG_DIR and PG_USER are not set (.ci/postgres.sh) and WAPACE_REQUIRE_SERVICES=1")
		}
		t.Skip("PG_DIR and PG_USER are not set (see .ci/postgres.sh)")
	}
	bin, err := exec.LookPath("pg_ctl")
	if err != nil {
		found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
		if len(found) == 0 {
			t.Fatal("pg_ctl not found")
		}
		bin = found[len(found)-1]
	}
	args = append([]string{"-D", filepath.Join(dir, "data"), "-l", filepath.Join(dir, "server.log")}, args...)
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", user, "--", bin}, args...)...)
	}
	return exec.Command(bin, args...)
}

// A real restart of the Postgres server (pg_ctl restart -m fast: every
// connection terminated, the server down for a while) in the middle of
// Run: Run rides it out and finishes, and every message is accepted
// exactly once, in order per recipient. With write marks, the marks that
// fail during the restart keep their requests from being written and the
// items go back to their lanes.
func TestPostgresRestartDuringRun(t *testing.T) {
	for _, marks := range []bool{false, true} {
		t.Run(fmt.Sprintf("marks=%v", marks), func(t *testing.T) { postgresRestart(t, marks) })
	}
}

func postgresRestart(t *testing.T, marks bool) {
	if testing.Short() {
		t.Skip("restarts the Postgres server")
	}
	dsn := requirePostgres(t)
	restart := pgCtl(t, "-m", "fast", "-w", "-t", "60", "restart")
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond))
	pairs := pairlimit.New(fastPairs)
	opts := []outbox.Option{outbox.WithLease(2 * time.Second)}
	if marks {
		opts = append(opts, outbox.WithWriteMarks())
	}
	var mu sync.Mutex
	var runErrs []error
	opts = append(opts, outbox.WithRunErrorObserver(func(err error, _ time.Duration) {
		mu.Lock()
		runErrs = append(runErrs, err)
		mu.Unlock()
	}))
	o, err := outbox.Open(t.Context(), dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	const recipients, perRecipient = 60, 10
	for j := range perRecipient {
		var msgs []cloudapi.Message
		for r := range recipients {
			m := cloudapi.Text(recipient(r), "x")
			m.IdempotencyKey = fmt.Sprintf("r%03d-m%d", r, j)
			msgs = append(msgs, m)
		}
		if _, err := o.EnqueueMany(t.Context(), from, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	total := recipients * perRecipient
	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(meta.URL()), cloudapi.WithPairLimiter(pairs), cloudapi.WithThroughput(400))
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := startRun(t.Context(), o, c)
	defer cancel()
	for meta.Accepted() < total/3 {
		select {
		case err := <-done:
			t.Fatalf("Run ended before the restart: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	at := meta.Accepted()
	if out, err := restart.CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl restart: %v\n%s", err, out)
	}
	after := meta.Accepted()
	t.Logf("restarted at %d accepted, %d after", at, after)
	if after >= total {
		t.Fatalf("every message was accepted before the restart ended: it tested nothing")
	}
	deadline := time.Now().Add(2 * time.Minute)
	for meta.Accepted() < total && time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("Run ended: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := drainThenStop(t, o, done, cancel, time.Minute); err != nil {
		t.Errorf("drain: %v", err)
	}
	checkDelivery(t, meta, total, false)
	snap, err := o.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d run errors ridden out; states %+v", len(runErrs), snap)
	if len(runErrs) == 0 {
		// Possible and safe: when the restart falls while Run holds no
		// transaction open, database/sql replaces the terminated
		// connections on their next use (driver.ErrBadConn, before
		// anything is sent) and nothing reaches the observer. The
		// messages accepted after the restart went through new
		// connections either way.
		t.Logf("no run error reported: the restart fell between Run's transactions")
	}
}
