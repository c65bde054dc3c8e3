//go:build unix

package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSQLiteTransitions isolates what schema 6 changed: a batch's
// claim (queued -> sending) and its acceptances (sending -> accepted),
// each one transaction, with the history and counters written by the
// per-row trigger (the statements as version 5 ran them: moves left
// alone) or per batch (claimMoved, acceptMoved). The two alternate in
// blocks of 2,000 items in one process, on one database; items spread
// over 20 numbers. It reports the median CPU per item of each, and their
// ratio (batch over trigger).
func BenchmarkSQLiteTransitions(b *testing.B) {
	for _, batch := range []int{1, 20, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			ctx := context.Background()
			o, err := Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "t.db"), WithCapacity(10_000_000))
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			const block = 2000
			trigClaim := strings.Replace(strings.Replace(claimSQL(o.d), ", moves = moves + 1", "", 1), " RETURNING "+movedColumns, "", 1)
			trigAccept := strings.Replace(strings.Replace(acceptSQL(o.d), ",\n\t\tmoves = moves + 1", "", 1), "RETURNING ikey, "+movedColumns, "RETURNING ikey", 1)
			if trigClaim == claimSQL(o.d) || trigAccept == acceptSQL(o.d) {
				b.Fatal("the statements changed: update the benchmark")
			}
			fill := func() (ids []int64, keys []string) {
				for s := range 20 {
					var ms []cloudapi.Message
					for i := range block / 20 {
						ms = append(ms, cloudapi.Text(fmt.Sprintf("+1%04d%06d", s, i), "x"))
					}
					if _, err := o.EnqueueMany(ctx, fmt.Sprintf("1065403522%05d", s), ms...); err != nil {
						b.Fatal(err)
					}
				}
				rows, err := o.db.QueryContext(ctx, `SELECT id, ikey FROM outbox_items WHERE state = 'queued' ORDER BY id`)
				if err != nil {
					b.Fatal(err)
				}
				defer rows.Close()
				for rows.Next() {
					var id int64
					var k string
					if err := rows.Scan(&id, &k); err != nil {
						b.Fatal(err)
					}
					ids, keys = append(ids, id), append(keys, k)
				}
				return ids, keys
			}
			run := func(moved bool) time.Duration {
				ids, keys := fill()
				c0 := processCPU()
				now := time.Now().UnixNano()
				for i := 0; i < len(ids); i += batch {
					j := min(i+batch, len(ids))
					tx, err := o.db.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					args := []any{"w", now + 1e12, now, now, 0, listArg(o.d, ids[i:j])}
					if moved {
						err = o.claimMoved(ctx, tx, args...)
					} else {
						_, err = o.exec(ctx, tx, trigClaim, args...)
					}
					if err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
					pairs := map[string]string{}
					for _, k := range keys[i:j] {
						pairs[k] = "wamid." + k
					}
					body, _ := json.Marshal(pairs)
					tx, err = o.db.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					var got []string
					if moved {
						got, err = o.acceptMoved(ctx, tx, now, string(body), "w")
					} else {
						got, err = o.queryKeys(ctx, tx, trigAccept, now, string(body), "w")
					}
					if err != nil || len(got) != j-i {
						b.Fatalf("accepted %d of %d: %v", len(got), j-i, err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				return processCPU() - c0
			}
			var trig, mov []float64
			for b.Loop() {
				trig = append(trig, float64(run(false).Microseconds())/block)
				mov = append(mov, float64(run(true).Microseconds())/block)
			}
			slices.Sort(trig)
			slices.Sort(mov)
			b.ReportMetric(trig[len(trig)/2], "trigger-cpu-µs/item")
			b.ReportMetric(mov[len(mov)/2], "batch-cpu-µs/item")
			b.ReportMetric(mov[len(mov)/2]/trig[len(trig)/2], "batch/trigger")
		})
	}
}
