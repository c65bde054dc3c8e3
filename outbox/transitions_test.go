package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// from2 is a second business number: a batch's counters cover several.
const from2 = "106540352242923"

// Random sequences of everything that changes states (enqueues, bursts,
// Run's claims and outcomes with refusals, deadlines passing, write
// marks, two workers at once on Postgres, Run stopped at any instant,
// claims of a dead worker found by a later Run, the operator's Expire and
// Requeue, status webhooks, a caller's own UPDATE and DELETE) leave the
// counters equal to a recount of the items per number and state, and
// each item's history equal to the transitions it went through (those
// the Outbox reported to its observer, and the caller's own).
func TestTransitionsProperty(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			pgDSN := ""
			if db == "postgres" {
				pgDSN = requirePostgres(t)
			}
			meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1000), cloudapitest.WithPairRule(20*time.Millisecond, 45, 20*time.Millisecond))
			cases := 0
			rapid.Check(t, func(rt *rapid.T) {
				cases++
				transitionsCase(t, rt, meta, pgDSN, cases)
			})
		})
	}
}

func transitionsCase(t *testing.T, rt *rapid.T, meta *cloudapitest.Server, pgDSN string, n int) {
	ctx := t.Context()
	var mu sync.Mutex
	want := map[string][]outbox.State{} // key -> states entered, in order
	observe := func(e outbox.Event) {
		mu.Lock()
		defer mu.Unlock()
		want[e.Key] = append(want[e.Key], e.State)
	}
	opts := []outbox.Option{outbox.WithObserver(observe), outbox.WithLease(time.Second), outbox.WithIdleWake(10 * time.Millisecond)}
	if rapid.Bool().Draw(rt, "marks") {
		opts = append(opts, outbox.WithWriteMarks())
	}
	dsn := pgDSN
	if dsn == "" {
		dsn = "sqlite:" + filepath.Join(t.TempDir(), fmt.Sprintf("p%d.db", n))
	}
	o, err := outbox.Open(ctx, dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	// Postgres: a second worker, beside the first in some runs.
	var o2 *outbox.Outbox
	if pgDSN != "" {
		if o2, err = outbox.Open(ctx, dsn, opts...); err != nil {
			t.Fatal(err)
		}
		defer o2.Close()
	}
	c := newClient(t, meta, cloudapi.WithPairLimiter(pairlimit.New(pairlimit.Policy{Interval: 20 * time.Millisecond, Burst: 45, BurstWindow: 20 * time.Millisecond})))
	var keys []string
	rcpt := func(lane int) string { return fmt.Sprintf("+2376%03d%05d", n%1000, lane) }
	next := 0
	newMsg := func(lane int) cloudapi.Message {
		m := cloudapi.Text(rcpt(lane), "x")
		if rapid.IntRange(0, 3).Draw(rt, "deadline") == 0 {
			m.ExpiresAt = time.Now().Add(time.Duration(rapid.IntRange(1, 300).Draw(rt, "ttl_ms")) * time.Millisecond)
		}
		m.IdempotencyKey = fmt.Sprintf("c%d-%d-%d", n, next, time.Now().UnixNano())
		next++
		keys = append(keys, m.IdempotencyKey)
		return m
	}
	pick := func(label string) string {
		if len(keys) == 0 {
			return "none"
		}
		return keys[rapid.IntRange(0, len(keys)-1).Draw(rt, label)]
	}
	sender := func() string { return rapid.SampledFrom([]string{from, from2}).Draw(rt, "sender") }
	ops := rapid.IntRange(1, 14).Draw(rt, "ops")
	for range ops {
		switch op := rapid.SampledFrom([]string{"enqueue", "enqueue", "burst", "refuse", "run", "run", "expire", "requeue", "steal", "webhook", "delete"}).Draw(rt, "op"); op {
		case "enqueue":
			k, lane := rapid.IntRange(1, 5).Draw(rt, "n"), rapid.IntRange(0, 3).Draw(rt, "lane")
			var ms []cloudapi.Message
			for range k {
				ms = append(ms, newMsg(lane))
			}
			if _, err := o.EnqueueMany(ctx, sender(), ms...); err != nil && !errors.Is(err, outbox.ErrExpired) {
				t.Fatal(err)
			}
		case "burst":
			lane := rapid.IntRange(0, 3).Draw(rt, "lane")
			if _, err := o.EnqueueBurst(ctx, sender(), newMsg(lane), newMsg(lane)); err != nil && !errors.Is(err, outbox.ErrExpired) {
				t.Fatal(err)
			}
		case "refuse":
			code := rapid.SampledFrom([]errcodes.Code{errcodes.PairRateLimit, errcodes.ThroughputLimit, errcodes.Undeliverable}).Draw(rt, "code")
			meta.FailNextFor(rcpt(rapid.IntRange(0, 3).Draw(rt, "lane")), code)
		case "run":
			d := time.Duration(rapid.IntRange(1, 150).Draw(rt, "ms")) * time.Millisecond
			rctx, cancel := context.WithTimeout(ctx, d)
			errc := make(chan error, 1)
			two := o2 != nil && rapid.Bool().Draw(rt, "two workers")
			if two {
				go func() { errc <- o2.Run(rctx, c) }()
			}
			err := o.Run(rctx, c)
			if two {
				if err2 := <-errc; err == nil || errors.Is(err, context.DeadlineExceeded) {
					err = err2
				}
			}
			cancel()
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Run: %v", err)
			}
		case "expire":
			if _, err := o.Expire(ctx, pick("key"), "property"); err != nil && !errors.Is(err, outbox.ErrWrongState) && !errors.Is(err, outbox.ErrNotFound) {
				t.Fatal(err)
			}
		case "requeue":
			_, err := o.Requeue(ctx, pick("key"), outbox.RequeueOptions{Reason: "property", Force: rapid.Bool().Draw(rt, "force")})
			if err != nil && !errors.Is(err, outbox.ErrWrongState) && !errors.Is(err, outbox.ErrMayHaveBeenSent) &&
				!errors.Is(err, outbox.ErrNotFound) && !errors.Is(err, outbox.ErrExpired) {
				t.Fatal(err)
			}
		case "steal":
			// A worker claimed it and died: a later Run finds its lease
			// ended (this is a caller's own UPDATE: the trigger's path).
			key := pick("key")
			q := `UPDATE outbox_items SET state = 'sending', owner = 'dead', lease_until = 1, sent_at = 1 WHERE ikey = ? AND state = 'queued'`
			if pgDSN != "" {
				q = `UPDATE outbox_items SET state = 'sending', owner = 'dead', lease_until = 1, sent_at = 1 WHERE ikey = $1 AND state = 'queued'`
			}
			res, err := o.DB().ExecContext(ctx, q, key)
			if err != nil {
				t.Fatal(err)
			}
			if k, _ := res.RowsAffected(); k == 1 {
				mu.Lock()
				want[key] = append(want[key], outbox.StateSending)
				mu.Unlock()
			}
		case "webhook":
			var reqs []cloudapitest.Request
			for _, r := range meta.Requests() {
				if r.Accepted && slices.Contains(keys, r.CallbackData) {
					reqs = append(reqs, r)
				}
			}
			if len(reqs) == 0 {
				continue
			}
			r := reqs[rapid.IntRange(0, len(reqs)-1).Draw(rt, "request")]
			st := cloudapitest.Delivered(r)
			if rapid.Bool().Draw(rt, "failed") {
				st = cloudapitest.Failed(r, errcodes.Undeliverable)
			}
			nt, err := webhook.Parse(meta.StatusBody(st))
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Reconcile(ctx, nt); err != nil {
				t.Fatal(err)
			}
		case "delete":
			key := pick("key")
			q := `DELETE FROM outbox_items WHERE ikey = ?`
			if pgDSN != "" {
				q = `DELETE FROM outbox_items WHERE ikey = $1`
			}
			if _, err := o.DB().ExecContext(ctx, q, key); err != nil {
				t.Fatal(err)
			}
			keys = slices.DeleteFunc(keys, func(k string) bool { return k == key })
			mu.Lock()
			delete(want, key)
			mu.Unlock()
		}
	}
	checkCountsByNumber(t, o.DB(), pgDSN != "")
	checkCounts(t, o)
	mu.Lock()
	defer mu.Unlock()
	for _, k := range keys {
		it, err := o.Get(ctx, k)
		if errors.Is(err, outbox.ErrNotFound) && len(want[k]) == 0 {
			continue // refused at its enqueue (its deadline)
		}
		if err != nil {
			t.Fatal(err)
		}
		var got []outbox.State
		for _, h := range it.History {
			got = append(got, h.State)
		}
		if !slices.Equal(got, want[k]) {
			t.Fatalf("%s: history %v, want %v", k, got, want[k])
		}
		if got[len(got)-1] != it.State {
			t.Fatalf("%s: history ends in %v, the item is %v", k, got[len(got)-1], it.State)
		}
	}
}

// checkCountsByNumber compares the counters (with Postgres's deltas not
// folded yet) with a recount of the items per number and state.
func checkCountsByNumber(t *testing.T, db *sql.DB, postgres bool) {
	t.Helper()
	read := func(q string) map[string]int {
		rows, err := db.QueryContext(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		m := map[string]int{}
		for rows.Next() {
			var sender, state string
			var n int
			if err := rows.Scan(&sender, &state, &n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				m[sender+"/"+state] = n
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	counters := `SELECT sender, state, n FROM outbox_counts`
	if postgres {
		counters = `SELECT sender, state, SUM(n) FROM (SELECT sender, state, n FROM outbox_counts
			UNION ALL SELECT sender, state, d FROM outbox_count_deltas) AS c GROUP BY sender, state`
	}
	got, want := read(counters), read(`SELECT sender, state, COUNT(*) FROM outbox_items GROUP BY sender, state`)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("counters %v, recount %v", got, want)
	}
}

// A sender process killed with SIGKILL at random instants (the batches'
// history and counters are written by the statements' transactions, not
// by a trigger) leaves the counters equal to a recount and every item's
// history ending in its state, after each kill and at the end.
func TestKill9Transitions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sender processes")
	}
	if runtime.GOOS == "windows" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("needs processes and SIGKILL")
	}
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond), cloudapitest.WithThroughput(100000))
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "outbox.db")
	o, err := outbox.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for j := range 10 {
		var ms []cloudapi.Message
		for r := range 100 {
			m := cloudapi.Text(recipient(r), "x")
			m.IdempotencyKey = fmt.Sprintf("r%03d-m%d", r, j)
			ms = append(ms, m)
			keys = append(keys, m.IdempotencyKey)
		}
		if _, err := o.EnqueueMany(t.Context(), []string{from, from2}[j%2], ms...); err != nil {
			t.Fatal(err)
		}
	}
	o.Close()
	check := func(when string) {
		t.Helper()
		o, err := outbox.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		checkCountsByNumber(t, o.DB(), false)
		checkCounts(t, o)
		for _, k := range keys {
			it := mustGet(t, o, k)
			h := it.History
			if h[0].State != outbox.StateQueued || h[len(h)-1].State != it.State {
				t.Fatalf("%s: %s: history %+v, state %v", when, k, h, it.State)
			}
		}
	}
	for round := range 4 {
		cmd, exited := startSender(t, dsn, meta.URL(), "", round%2 == 1)
		at := meta.Accepted() + 50 + rand.IntN(150)
	wait:
		for meta.Accepted() < at {
			select {
			case err := <-exited:
				t.Fatalf("round %d: the sender exited before its kill: %v", round, err)
			case <-time.After(time.Duration(rand.IntN(5)) * time.Millisecond):
			case <-t.Context().Done():
				break wait
			}
		}
		cmd.Process.Kill()
		<-exited
		when := fmt.Sprintf("after kill %d at %d accepted", round, meta.Accepted())
		t.Log(when)
		check(when)
	}
	_, last := startSender(t, dsn, meta.URL(), "", false)
	if err := <-last; err != nil {
		t.Fatalf("last sender: %v", err)
	}
	check("at the end")
	seen := map[string]int{}
	for _, r := range meta.Requests() {
		if r.Accepted {
			if seen[r.CallbackData]++; seen[r.CallbackData] > 1 {
				t.Errorf("%s accepted twice", r.CallbackData)
			}
		}
	}
}
