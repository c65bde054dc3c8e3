package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// requirePostgres returns the DSN of a fresh, empty database on the server
// named by WAPACE_POSTGRES_URL. Without it the test skips, or fails under
// WAPACE_REQUIRE_SERVICES=1.
func requirePostgres(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv("WAPACE_POSTGRES_URL")
	if base == "" {
		if os.Getenv("WAPACE_REQUIRE_SERVICES") == "1" {
			tb.Fatal("WAPACE_POSTGRES_URL is not set and WAPACE_REQUIRE_SERVICES=1")
		}
		tb.Skip("WAPACE_POSTGRES_URL is not set (see .ci/postgres.sh)")
	}
	db, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	name := fmt.Sprintf("outbox_test_%d_%d", time.Now().UnixNano(), os.Getpid())
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		tb.Fatalf("creating a test database: %v", err)
	}
	tb.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err == nil {
			_, _ = db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
			db.Close()
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// fastPairs is a pair rule fast enough for real-clock tests; the client
// paces a little slower than the fake enforces.
var fastPairs = pairlimit.Policy{Interval: 60 * time.Millisecond, Burst: 45, BurstWindow: 60 * time.Millisecond}

// Four workers share one Postgres queue: every message is accepted exactly
// once, in FIFO order per recipient, with no 131056.
func TestPostgresWorkers(t *testing.T) {
	dsn := requirePostgres(t)
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond), cloudapitest.WithThroughput(10000))
	base := meta.URL()
	ctx := t.Context()
	const workers, recipients, perRecipient = 4, 40, 5
	obs := make([]*outbox.Outbox, workers)
	clients := make([]*cloudapi.Client, workers)
	for i := range obs {
		c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(base), cloudapi.WithPairLimiter(pairlimit.New(fastPairs)), cloudapi.WithThroughput(10000))
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
		o, err := outbox.Open(ctx, dsn, outbox.WithClient(c), outbox.WithIdleWake(20*time.Millisecond), outbox.WithWorkerID(fmt.Sprintf("w%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		obs[i] = o
	}
	for j := range perRecipient {
		for r := range recipients {
			m := cloudapi.Text(recipient(r), "x")
			m.IdempotencyKey = fmt.Sprintf("r%03d-m%d", r, j)
			if _, err := obs[(r+j)%workers].Enqueue(ctx, from, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, o := range obs {
		c := clients[i]
		wg.Go(func() { _ = o.Run(runCtx, c) })
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		st, err := obs[0].Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Counts[outbox.StateQueued]+st.Counts[outbox.StateSending] == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	checkDelivery(t, meta, recipients*perRecipient, false)
}

// checkDelivery checks that every key was accepted at most once (exactly
// once unless allowUnknown), in FIFO order per recipient, with no 131056.
func checkDelivery(t *testing.T, meta *cloudapitest.Server, total int, allowUnknown bool) {
	t.Helper()
	seen := map[string]int{}
	last := map[string]int{}
	for _, r := range meta.Requests() {
		if !r.Accepted {
			continue
		}
		seen[r.CallbackData]++
		var rcpt string
		var idx int
		if _, err := fmt.Sscanf(strings.Replace(r.CallbackData, "-m", " ", 1), "%s %d", &rcpt, &idx); err != nil {
			t.Fatalf("key %q: %v", r.CallbackData, err)
		}
		if prev, ok := last[rcpt]; ok && idx <= prev {
			t.Errorf("recipient %s: message %d accepted after %d (FIFO broken)", rcpt, idx, prev)
		}
		last[rcpt] = idx
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("key %s accepted %d times", k, n)
		}
	}
	if !allowUnknown && len(seen) != total {
		t.Errorf("accepted %d distinct messages, want %d", len(seen), total)
	}
	if n := meta.Count(errcodes.PairRateLimit); n != 0 {
		t.Errorf("%d x 131056", n)
	}
}
