package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// floorBlock is the floor of a dispatch: plain database/sql on a file
// with the outbox's pragmas, n rows inserted (in transactions of 100)
// then each updated to its final state (in transactions of 100), as
// little as a durable queue can do per message. It returns the rate.
func floorBlock(b *testing.B, dir string, n int) float64 {
	path := filepath.Join(dir, fmt.Sprintf("floor-%d.db", time.Now().UnixNano()))
	defer os.Remove(path)
	db, err := sql.Open("sqlite", outbox.SQLiteSource(path))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE items (id INTEGER PRIMARY KEY, ikey TEXT NOT NULL UNIQUE, message TEXT NOT NULL, state TEXT NOT NULL, wamid TEXT NOT NULL DEFAULT '')`); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for _, q := range []string{`INSERT INTO items (ikey, message, state) VALUES (?, ?, 'queued')`, `UPDATE items SET state = 'accepted', wamid = ? WHERE ikey = ?`} {
		for i := 0; i < n; i += 100 {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			for j := i; j < min(i+100, n); j++ {
				key := fmt.Sprintf("key-%d", j)
				args := []any{key, `{"to":"+1` + fmt.Sprintf("%010d", j) + `","text":{"body":"benchmark"}}`}
				if q[0] == 'U' {
					args = []any{"wamid." + key, key}
				}
				if _, err := tx.ExecContext(ctx, q, args...); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// dispatchBlock enqueues n messages (one per recipient, untimed) and times
// Run taking them from queued to accepted through the real client and
// the in-memory fake, limits out of the way. It returns the rate.
func dispatchBlock(b *testing.B, dir string, n int) float64 {
	ctx := context.Background()
	path := filepath.Join(dir, fmt.Sprintf("outbox-%d.db", time.Now().UnixNano()))
	defer os.Remove(path)
	var accepted atomic.Int64
	done := make(chan struct{})
	o, err := outbox.Open(ctx, "sqlite:"+path, outbox.WithThroughput(1_000_000), outbox.WithObserver(func(e outbox.Event) {
		if e.State == outbox.StateAccepted && accepted.Add(1) == int64(n) {
			close(done)
		}
	}))
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	msgs := make([]cloudapi.Message, n)
	for i := range msgs {
		msgs[i] = cloudapi.Text(fmt.Sprintf("+1%010d", i), "benchmark")
	}
	for i := 0; i < n; i += 100 {
		tx, err := o.DB().BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range msgs[i:min(i+100, n)] {
			if _, err := o.EnqueueTx(ctx, tx, from, m); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	meta := cloudapitest.NewServer(b, cloudapitest.WithThroughput(1_000_000))
	c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL), cloudapi.WithThroughput(1_000_000))
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	start := time.Now()
	go func() { errc <- o.Run(runCtx, c) }()
	select {
	case <-done:
	case err := <-errc:
		b.Fatalf("run: %v", err)
	}
	rate := float64(n) / time.Since(start).Seconds()
	cancel()
	<-errc
	return rate
}

// BenchmarkSQLiteDispatchVsFloor alternates blocks of the floor and of
// the outbox's dispatch (2,000 messages each) in one process, and reports
// the median ratio dispatch/floor and its spread, and both medians.
func BenchmarkSQLiteDispatchVsFloor(b *testing.B) {
	const n = 2000
	dir := b.TempDir()
	var ratios, floors, dispatches []float64
	for b.Loop() {
		f := floorBlock(b, dir, n)
		d := dispatchBlock(b, dir, n)
		floors, dispatches, ratios = append(floors, f), append(dispatches, d), append(ratios, d/f)
	}
	reportRatio(b, ratios, floors, dispatches, "dispatch")
}

// reportRatio reports the median ratio with its range, and the medians of
// the floor and of the measured rate.
func reportRatio(b *testing.B, ratios, floors, rates []float64, what string) {
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(med(ratios), "x-floor")
	b.ReportMetric(slices.Min(ratios), "x-floor-min")
	b.ReportMetric(slices.Max(ratios), "x-floor-max")
	b.ReportMetric(med(floors), "floor-msg/s")
	b.ReportMetric(med(rates), what+"-msg/s")
}
