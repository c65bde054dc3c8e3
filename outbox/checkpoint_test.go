package outbox_test

import (
	"os"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/throughput"
)

// TestRunCheckpointsOffItsCommits: Run copies SQLite's log back into the
// file on a connection of its own (checkpoint.go), and the writer's own
// automatic checkpoint waits for a log four times the default.
func TestRunCheckpointsOffItsCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const id = "106540352242931"
		meta := cloudapitest.NewServer(t, cloudapitest.WithNumberThroughput(id, throughput.Upgraded))
		o, _ := openSQLite(t)
		var runs atomic.Int64
		outbox.SetCheckpointHook(o, func() { runs.Add(1) })
		var pages int
		if err := o.DB().QueryRowContext(t.Context(), "PRAGMA wal_autocheckpoint").Scan(&pages); err != nil {
			t.Fatal(err)
		}
		if pages != 4000 {
			t.Errorf("the writer's wal_autocheckpoint is %d pages, want 4000", pages)
		}
		c := newClient(t, meta, cloudapi.WithNumberThroughput(id, throughput.Upgraded))
		const n = 3000
		enqueueCampaign(t, o, id, n)
		runErr, stop := startRun(t.Context(), o, c)
		if err := drainThenStop(t, o, runErr, stop, time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := meta.Accepted(); got != n {
			t.Fatalf("%d accepted, want %d", got, n)
		}
		// 3,000 items claimed and recorded: 6,000 moves, a checkpoint
		// every 2,000 (two wake-ups may coalesce).
		if got := runs.Load(); got < 2 {
			t.Errorf("%d background checkpoints, want at least 2", got)
		}
	})
}

// TestLogBoundedWhileTheCheckpointerStalls: with Run's checkpointer held
// up for the whole run, the writer's own checkpoint still bounds the log
// (4,000 pages and the transaction that crossed them), where without it
// the log would hold every page the run wrote.
func TestLogBoundedWhileTheCheckpointerStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const id = "106540352242931"
		meta := cloudapitest.NewServer(t, cloudapitest.WithNumberThroughput(id, throughput.Upgraded))
		o, dsn := openSQLite(t)
		released := make(chan struct{})
		var stalled atomic.Bool
		outbox.SetCheckpointHook(o, func() {
			stalled.Store(true)
			<-released
		})
		c := newClient(t, meta, cloudapi.WithNumberThroughput(id, throughput.Upgraded))
		const n = 30000
		enqueueCampaign(t, o, id, n)
		runErr, stop := startRun(t.Context(), o, c)
		derr := o.Drain(t.Context())
		close(released)
		stopRun(t, runErr, stop)
		if derr != nil {
			t.Fatal(derr)
		}
		if !stalled.Load() {
			t.Fatal("the checkpointer never ran")
		}
		fi, err := os.Stat(dsn[len("sqlite:"):] + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		// 4,000 pages of 4 KiB (and their frame headers), plus the largest
		// transaction's: under 24 MiB.
		if fi.Size() > 24<<20 {
			t.Errorf("the log grew to %d bytes with its checkpointer stalled, want at most %d", fi.Size(), 24<<20)
		}
		t.Logf("log: %d bytes", fi.Size())
	})
}
