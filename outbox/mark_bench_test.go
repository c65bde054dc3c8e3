package outbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/outbox"
)

// markBlock enqueues n messages (one per recipient, in runs of 100 from
// each of dispatchNumbers numbers, untimed) to the
// outbox at dsn and times Run taking them from queued to accepted through
// the real client and the in-memory fake, limits out of the way, with
// opts. It returns the rate and the process's CPU time per message.
func markBlock(b *testing.B, dsn string, n int, opts ...outbox.Option) (rate float64, cpuPerMsg time.Duration) {
	ctx := context.Background()
	all, done := acceptedAll(n)
	opts = append(opts, all)
	o, err := outbox.Open(ctx, dsn, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	msgs := make([]cloudapi.Message, n)
	for i := range msgs {
		msgs[i] = cloudapi.Text(fmt.Sprintf("+1%010d", i), "benchmark")
	}
	for i := 0; i < n; i += 100 {
		if _, err := o.EnqueueMany(ctx, dispatchFrom(i/100), msgs[i:min(i+100, n)]...); err != nil {
			b.Fatal(err)
		}
	}
	rate, cpu := timeDispatch(b, o, n, done)
	return rate, cpu / time.Duration(n)
}

// benchWriteMarks alternates blocks of dispatch without write marks (the
// default, the baseline) and with them (WithWriteMarks) on fresh outboxes made by newDSN,
// and reports the medians and ranges of the ratios marks/baseline of the
// rate and of the CPU time per message.
func benchWriteMarks(b *testing.B, newDSN func() string) {
	const n = 2000
	var rates, cpus, base, marked []float64
	for b.Loop() {
		r0, c0 := markBlock(b, newDSN(), n)
		r1, c1 := markBlock(b, newDSN(), n, outbox.WithWriteMarks())
		rates, cpus = append(rates, r1/r0), append(cpus, float64(c1)/float64(c0))
		base, marked = append(base, r0), append(marked, r1)
	}
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(med(rates), "x-rate")
	b.ReportMetric(slices.Min(rates), "x-rate-min")
	b.ReportMetric(slices.Max(rates), "x-rate-max")
	b.ReportMetric(med(cpus), "x-cpu")
	b.ReportMetric(slices.Min(cpus), "x-cpu-min")
	b.ReportMetric(slices.Max(cpus), "x-cpu-max")
	b.ReportMetric(med(base), "base-msg/s")
	b.ReportMetric(med(marked), "marks-msg/s")
}

// BenchmarkSQLiteWriteMarks measures what the write marks cost dispatch on
// SQLite (see benchWriteMarks).
func BenchmarkSQLiteWriteMarks(b *testing.B) {
	dir := b.TempDir()
	benchWriteMarks(b, func() string {
		p := filepath.Join(dir, fmt.Sprintf("outbox-%d.db", time.Now().UnixNano()))
		b.Cleanup(func() { os.Remove(p) })
		return "sqlite:" + p
	})
}

// BenchmarkPostgresWriteMarks is BenchmarkSQLiteWriteMarks on Postgres.
func BenchmarkPostgresWriteMarks(b *testing.B) {
	benchWriteMarks(b, func() string { return requirePostgres(b) })
}
