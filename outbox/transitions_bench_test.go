//go:build unix

package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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
	benchTransitions(b, func(b *testing.B) string { return "sqlite:" + filepath.Join(b.TempDir(), "t.db") })
}

// BenchmarkPostgresTransitions is BenchmarkSQLiteTransitions on the
// Postgres of WAPACE_POSTGRES_URL (its database as is), one connection
// after the other: the wall time per item is mostly the server's.
func BenchmarkPostgresTransitions(b *testing.B) {
	dsn := os.Getenv("WAPACE_POSTGRES_URL")
	if dsn == "" {
		b.Skip("WAPACE_POSTGRES_URL is not set (see .ci/postgres.sh)")
	}
	benchTransitions(b, func(*testing.B) string { return dsn })
}

func benchTransitions(b *testing.B, dsn func(*testing.B) string) {
	for _, batch := range []int{1, 20, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			ctx := context.Background()
			o, err := Open(ctx, dsn(b), WithCapacity(10_000_000))
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			const block = 2000
			// The statements as version 5 ran them: moves left alone,
			// nothing returned but the keys.
			trigClaim := strings.Replace(strings.Replace(claimSQL(o.d), ", moves = moves + 1", "", 1), " RETURNING "+movedColumns, "", 1)
			trigAccept := acceptSQL(o.d)
			for _, r := range [][2]string{{",\n\t\tmoves = moves + 1", ""}, {"RETURNING id", "RETURNING ikey"},
				{", moves = i.moves + 1", ""}, {"RETURNING i.ikey, i.id, i.sender, i.state, i.state_at, i.reason", "RETURNING i.ikey"}} {
				trigAccept = strings.Replace(trigAccept, r[0], r[1], 1)
			}
			if strings.Contains(trigClaim, "moves") || strings.Contains(trigAccept, "moves") || strings.Contains(trigAccept, "state_at,") {
				b.Fatal("the statements changed: update the benchmark")
			}
			owner := fmt.Sprintf("w%d", time.Now().UnixNano())
			fill := func() (ids []int64, keys, senders []string) {
				for s := range 20 {
					var ms []cloudapi.Message
					for i := range block / 20 {
						ms = append(ms, cloudapi.Text(fmt.Sprintf("+1%04d%06d", s, i), "x"))
					}
					if _, err := o.EnqueueMany(ctx, fmt.Sprintf("1065403522%05d", s), ms...); err != nil {
						b.Fatal(err)
					}
				}
				rows, err := o.db.QueryContext(ctx, o.q(`SELECT id, ikey, sender FROM outbox_items WHERE state = 'queued' ORDER BY id`))
				if err != nil {
					b.Fatal(err)
				}
				defer rows.Close()
				for rows.Next() {
					var id int64
					var k, s string
					if err := rows.Scan(&id, &k, &s); err != nil {
						b.Fatal(err)
					}
					ids, keys, senders = append(ids, id), append(keys, k), append(senders, s)
				}
				return ids, keys, senders
			}
			var wall time.Duration
			run := func(moved bool) time.Duration {
				ids, keys, senders := fill()
				c0, w0 := processCPU(), time.Now()
				now := time.Now().UnixNano()
				for i := 0; i < len(ids); i += batch {
					j := min(i+batch, len(ids))
					tx, err := o.db.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					args := []any{owner, now + 1e12, now, now, 0, listArg(o.d, ids[i:j])}
					if moved {
						var refs []claimRef
						for k := i; k < j; k++ {
							refs = append(refs, claimRef{ids[k], senders[k]})
						}
						err = o.claimMoved(ctx, tx, nil, refs, owner, now+1e12, now, 0)
					} else {
						_, err = o.exec(ctx, tx, trigClaim, args...)
					}
					if err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
					accArgs := []any{now, "", owner}
					if o.d.postgres {
						var ws []string
						for _, k := range keys[i:j] {
							ws = append(ws, "wamid."+k)
						}
						accArgs = []any{now, keys[i:j], ws, owner}
					} else {
						pairs := map[string]string{}
						for _, k := range keys[i:j] {
							pairs[k] = "wamid." + k
						}
						body, _ := json.Marshal(pairs)
						accArgs[1] = string(body)
					}
					tx, err = o.db.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					var got []string
					if moved {
						var as []acceptRef
						for k := i; k < j; k++ {
							as = append(as, acceptRef{ids[k], keys[k], senders[k], "wamid." + keys[k]})
						}
						got, err = o.acceptMoved(ctx, tx, nil, now, owner, as)
					} else {
						got, err = o.queryKeys(ctx, tx, trigAccept, accArgs...)
					}
					if err != nil || len(got) != j-i {
						b.Fatalf("accepted %d of %d: %v", len(got), j-i, err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				wall = time.Since(w0)
				return processCPU() - c0
			}
			var trig, mov, trigWall, movWall []float64
			for b.Loop() {
				trig = append(trig, float64(run(false).Microseconds())/block)
				trigWall = append(trigWall, float64(wall.Microseconds())/block)
				mov = append(mov, float64(run(true).Microseconds())/block)
				movWall = append(movWall, float64(wall.Microseconds())/block)
			}
			slices.Sort(trigWall)
			slices.Sort(movWall)
			b.ReportMetric(trigWall[len(trigWall)/2], "trigger-wall-µs/item")
			b.ReportMetric(movWall[len(movWall)/2], "batch-wall-µs/item")
			slices.Sort(trig)
			slices.Sort(mov)
			b.ReportMetric(trig[len(trig)/2], "trigger-cpu-µs/item")
			b.ReportMetric(mov[len(mov)/2], "batch-cpu-µs/item")
			b.ReportMetric(mov[len(mov)/2]/trig[len(trig)/2], "batch/trigger")
		})
	}
}
