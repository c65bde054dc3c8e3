package outbox_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// copyFixture copies testdata/name into a temporary directory.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// openUpgraded opens a copy of testdata/name with this code (which
// migrates it in place) and checks that it is at SchemaVersion. It is
// closed when t ends; path is the copy's.
func openUpgraded(t *testing.T, name string) (o *outbox.Outbox, path string) {
	t.Helper()
	path = copyFixture(t, name)
	o, err := outbox.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	var v int
	if err := o.DB().QueryRowContext(t.Context(), `SELECT version FROM outbox_schema`).Scan(&v); err != nil || v != outbox.SchemaVersion {
		t.Fatalf("schema version %d (%v), want %d", v, err, outbox.SchemaVersion)
	}
	return o, path
}

// testdata/v0.db was written by the release before schema versions (at
// cf094c6): four items accepted, three lanes of three queued items, and one
// queued item whose deadline passed long ago. Opened by this code it is
// migrated in place, keeps every item and its history, and drains with
// each queued item sent once, in its lane's order, and nothing sent again.
func TestUpgradeFromUnversionedSQLite(t *testing.T) {
	ctx := t.Context()
	o, path := openUpgraded(t, "v0.db")
	st, err := o.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counts[outbox.StateAccepted] != 4 || st.Counts[outbox.StateQueued] != 10 {
		t.Fatalf("counts after the upgrade: %v", st.Counts)
	}
	it := mustGet(t, o, "sent-0")
	if it.State != outbox.StateAccepted || it.MessageID == "" || len(it.History) != 3 ||
		it.History[0].State != outbox.StateQueued || it.History[2].State != outbox.StateAccepted {
		t.Fatalf("an item sent before the upgrade: %+v", it)
	}

	meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1000), cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond))
	c := newClient(t, meta, cloudapi.WithPairLimiter(pairlimit.New(fastPairs)))
	runDrain(t, o, c)
	st, err = o.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counts[outbox.StateAccepted] != 13 || st.Counts[outbox.StateExpired] != 1 || st.Counts[outbox.StateQueued]+st.Counts[outbox.StateSending] != 0 {
		t.Fatalf("counts after draining: %v", st.Counts)
	}
	var keys []string
	for _, r := range meta.Requests() {
		if r.Accepted {
			keys = append(keys, r.CallbackData)
		}
	}
	if len(keys) != 9 {
		t.Fatalf("sent %v, want the 9 queued items once each", keys)
	}
	last := map[string]string{}
	for _, k := range keys {
		if !strings.HasPrefix(k, "queued-") {
			t.Fatalf("sent %q, which was sent before the upgrade or expired", k)
		}
		lane := k[:len("queued-0")]
		if prev := last[lane]; prev != "" && prev > k {
			t.Errorf("lane %s: %s sent after %s", lane, k, prev)
		}
		last[lane] = k
	}
	// Opening it again changes nothing.
	o.Close()
	o2, err := outbox.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	if st2, err := o2.Snapshot(ctx); err != nil || st2.Counts[outbox.StateAccepted] != 13 {
		t.Fatalf("reopened: %v %v", st2.Counts, err)
	}
}

// A database written by a newer version is refused, untouched.
func TestNewerSchemaRefused(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			ctx := t.Context()
			var dsn string
			if db == "sqlite" {
				dsn = "sqlite:" + filepath.Join(t.TempDir(), "x.db")
			} else {
				dsn = requirePostgres(t)
			}
			o, err := outbox.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := o.DB().ExecContext(ctx, `UPDATE outbox_schema SET version = 99`); err != nil {
				t.Fatal(err)
			}
			o.Close()
			_, err = outbox.Open(ctx, dsn)
			if !errors.Is(err, outbox.ErrSchemaTooNew) || !strings.Contains(err.Error(), "99") {
				t.Fatalf("Open of a version-99 database: %v, want ErrSchemaTooNew naming 99", err)
			}
		})
	}
}

// Open names the file and the cause when it cannot be created.
func TestOpenMissingDirectory(t *testing.T) {
	_, err := outbox.Open(t.Context(), "sqlite:/no/such/dir/x.db")
	if err == nil || !strings.Contains(err.Error(), "/no/such/dir/x.db") || !strings.Contains(err.Error(), "no such file or directory") {
		t.Fatalf("Open: %v, want the path and the cause", err)
	}
	dir := t.TempDir()
	_, err = outbox.Open(t.Context(), "sqlite:"+dir)
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("Open of a directory: %v", err)
	}
}

// OpenDB uses a caller's pool and leaves it open on Close.
func TestOpenDB(t *testing.T) {
	ctx := t.Context()
	db, err := sql.Open("sqlite", outbox.SQLiteSource(filepath.Join(t.TempDir(), "x.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	o, err := outbox.OpenDB(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Enqueue(ctx, from, cloudapi.Text(recipient(1), "hi")); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("the caller's pool was closed: %v", err)
	}
	if _, err := outbox.OpenDB(ctx, nil); !errors.Is(err, outbox.ErrInvalidDSN) {
		t.Fatalf("OpenDB(nil): %v", err)
	}
}

// A Postgres outbox of version 1 (tables made by the release before
// versions, items inserted as it inserted them) is migrated by the first
// worker to open it, with its counts and history, and drains once.
func TestUpgradeFromUnversionedPostgres(t *testing.T) {
	dsn := requirePostgres(t)
	ctx := t.Context()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, outbox.SchemaPostgres1); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixNano()
	for i := range 6 {
		m := cloudapi.Text(recipient(i%2), "before the upgrade")
		body, _ := json.Marshal(m)
		key := fmt.Sprintf("r%d-m%d", i%2, i)
		if _, err := db.ExecContext(ctx, `INSERT INTO outbox_items (ikey, seq, lane, sender, recipient, kind, message, state, enqueued_at, due_at, expires_at, state_at)
			VALUES ($1, 0, $2, $3, $4, 'text', $5, 'queued', $6, $6, 0, $6)`, key, from+">"+strings.TrimPrefix(recipient(i%2), "+"), from,
			strings.TrimPrefix(recipient(i%2), "+"), string(body), now+int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	obs := make([]*outbox.Outbox, 2)
	for i := range obs {
		if obs[i], err = outbox.Open(ctx, dsn, outbox.WithIdleWake(50*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		defer obs[i].Close()
	}
	st, err := obs[0].Snapshot(ctx)
	if err != nil || st.Counts[outbox.StateQueued] != 6 {
		t.Fatalf("after the upgrade: %v %v", st.Counts, err)
	}
	if it := mustGet(t, obs[1], "r0-m0"); len(it.History) != 1 || it.History[0].State != outbox.StateQueued {
		t.Fatalf("history kept: %+v", it)
	}
	meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1000), cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(obs))
	for _, o := range obs {
		c := newClient(t, meta, cloudapi.WithPairLimiter(pairlimit.New(fastPairs)))
		go func() { errc <- o.Run(runCtx, c) }()
	}
	dctx, dcancel := context.WithTimeout(ctx, time.Minute)
	defer dcancel()
	if err := obs[0].Drain(dctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	for range obs {
		<-errc
	}
	seen := map[string]int{}
	for _, r := range meta.Requests() {
		if r.Accepted {
			seen[r.CallbackData]++
		}
	}
	if len(seen) != 6 {
		t.Fatalf("sent %v, want 6 once each", seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s sent %d times", k, n)
		}
	}
	if got := checkCounts(t, obs[1]); got[outbox.StateAccepted] != 6 {
		t.Fatalf("counters %v", got)
	}
}

// testdata/v5.db was written by schema version 5 (at ec3f6f2, see the
// commit that added it): four items accepted, three lanes of three queued
// items, one expired by the operator, one queued whose deadline has
// passed, and a lane whose head was claimed by a worker that died
// (sending, its lease ended) with one item queued behind it. Opened by
// this code it is migrated in place with its counters and history, and
// drains with each queued item sent once, in its lane's order: nothing
// sent before is sent again, the dead claim becomes submitted_unknown.
func TestUpgradeFromV5SQLite(t *testing.T) {
	o, _ := openUpgraded(t, "v5.db")
	checkCountsByNumber(t, o.DB(), false)
	if got := checkCounts(t, o); got[outbox.StateAccepted] != 4 || got[outbox.StateQueued] != 11 || got[outbox.StateSending] != 1 || got[outbox.StateExpired] != 1 {
		t.Fatalf("counts after the upgrade: %v", got)
	}
	states := func(it outbox.Item) (s []outbox.State) {
		for _, h := range it.History {
			s = append(s, h.State)
		}
		return s
	}
	if it := mustGet(t, o, "sent-0"); it.State != outbox.StateAccepted || it.MessageID == "" ||
		fmt.Sprint(states(it)) != fmt.Sprint([]outbox.State{outbox.StateQueued, outbox.StateSending, outbox.StateAccepted}) {
		t.Fatalf("an item sent before the upgrade: %+v", it)
	}

	meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1000), cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond))
	c := newClient(t, meta, cloudapi.WithPairLimiter(pairlimit.New(fastPairs)))
	runDrain(t, o, c)
	checkCountsByNumber(t, o.DB(), false)
	got := checkCounts(t, o)
	if got[outbox.StateAccepted] != 14 || got[outbox.StateExpired] != 2 || got[outbox.StateSubmittedUnknown] != 1 || got[outbox.StateQueued]+got[outbox.StateSending] != 0 {
		t.Fatalf("counts after draining: %v", got)
	}
	seen := map[string]int{}
	last := map[string]string{}
	for _, r := range meta.Requests() {
		if !r.Accepted {
			continue
		}
		k := r.CallbackData
		seen[k]++
		if strings.HasPrefix(k, "queued-") {
			lane := k[:len("queued-0")]
			if prev := last[lane]; prev != "" && prev > k {
				t.Errorf("lane %s: %s sent after %s", lane, k, prev)
			}
			last[lane] = k
		}
	}
	if len(seen) != 10 || seen["dead-1"] != 1 {
		t.Fatalf("sent %v, want the 9 queued items and dead-1", seen)
	}
	for k, n := range seen {
		if n != 1 || !(strings.HasPrefix(k, "queued-") || k == "dead-1") {
			t.Errorf("%s sent %d times", k, n)
		}
	}
	for key, want := range map[string][]outbox.State{
		"dead-0":     {outbox.StateQueued, outbox.StateSending, outbox.StateSubmittedUnknown},
		"late":       {outbox.StateQueued, outbox.StateExpired},
		"cancelled":  {outbox.StateQueued, outbox.StateExpired},
		"queued-1-2": {outbox.StateQueued, outbox.StateSending, outbox.StateAccepted},
		"sent-3":     {outbox.StateQueued, outbox.StateSending, outbox.StateAccepted},
	} {
		if it := mustGet(t, o, key); fmt.Sprint(states(it)) != fmt.Sprint(want) {
			t.Errorf("%s: history %v, want %v", key, states(it), want)
		}
	}
}

// A Postgres outbox of version 5 (items enqueued and moved by that
// version's per-row trigger) is migrated by the first worker to open it;
// its counters equal a recount, a change of state made the way a worker
// of version 5 still running makes it (without moves) is counted and
// recorded by the new triggers, and the queue drains once.
func TestUpgradeFromV5Postgres(t *testing.T) {
	dsn := requirePostgres(t)
	ctx := t.Context()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := outbox.CreateSchema(ctx, db, true, 5); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixNano()
	for i := range 8 {
		m := cloudapi.Text(recipient(i%2), "before the upgrade")
		body, _ := json.Marshal(m)
		sender := []string{from, from2}[i%2]
		if _, err := db.ExecContext(ctx, `INSERT INTO outbox_items (ikey, seq, lane, sender, recipient, kind, message, state, enqueued_at, due_at, expires_at, state_at)
			VALUES ($1, 0, $2, $3, $4, 'text', $5, 'queued', $6, $6, 0, $6)`, fmt.Sprintf("v5-%d", i), sender+">"+strings.TrimPrefix(recipient(i%2), "+"), sender,
			strings.TrimPrefix(recipient(i%2), "+"), string(body), now+int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Two sent and accepted by version 5.
	if _, err := db.ExecContext(ctx, `UPDATE outbox_items SET state = 'accepted', state_at = $1, wamid = 'wamid.' || ikey WHERE ikey IN ('v5-0', 'v5-1')`, now+10); err != nil {
		t.Fatal(err)
	}
	o, err := outbox.Open(ctx, dsn, outbox.WithIdleWake(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	checkCountsByNumber(t, db, true)
	// A worker of version 5, still running, claims v5-2.
	if _, err := db.ExecContext(ctx, `UPDATE outbox_items SET state = 'sending', owner = 'v5', lease_until = 1, state_at = $1, sent_at = $1, attempts = attempts + 1, reason = ''
		WHERE id IN (SELECT id FROM outbox_items WHERE ikey = 'v5-2')`, now+20); err != nil {
		t.Fatal(err)
	}
	checkCountsByNumber(t, db, true)
	if it := mustGet(t, o, "v5-2"); len(it.History) != 2 || it.History[1].State != outbox.StateSending {
		t.Fatalf("a version 5 claim after the upgrade: %+v", it.History)
	}
	meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1000), cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- o.Run(runCtx, newClient(t, meta, cloudapi.WithPairLimiter(pairlimit.New(fastPairs)))) }()
	dctx, dcancel := context.WithTimeout(ctx, time.Minute)
	defer dcancel()
	if err := o.Drain(dctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-errc
	checkCountsByNumber(t, db, true)
	got := checkCounts(t, o)
	if got[outbox.StateAccepted] != 7 || got[outbox.StateSubmittedUnknown] != 1 {
		t.Fatalf("counters %v", got)
	}
	seen := map[string]int{}
	for _, r := range meta.Requests() {
		if r.Accepted {
			seen[r.CallbackData]++
		}
	}
	if len(seen) != 5 || seen["v5-0"]+seen["v5-1"]+seen["v5-2"] != 0 {
		t.Fatalf("sent %v, want v5-3 to v5-7 once each", seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s sent %d times", k, n)
		}
	}
}

// testdata/v6.db was written by schema version 6 (at 070f5ea, see the
// commit that added it): four items accepted; three lanes of each of two
// numbers, three queued items each, the lanes created in an order other
// than their names' and their items interleaved; one expired by the
// operator; one queued whose deadline has passed; a queued item with a
// burst of three behind it; and a lane whose head was claimed by a worker
// that died (sending, its lease ended) with one item queued behind it.
// Opened by this code its lanes are numbered in the order they first
// appeared, an item enqueued after the upgrade joins its lane's end, and
// the queue drains with each queued item sent once, in its lane's order,
// the burst back to back, nothing sent before sent again.
func TestUpgradeFromV6SQLite(t *testing.T) {
	ctx := t.Context()
	o, _ := openUpgraded(t, "v6.db")
	checkCountsByNumber(t, o.DB(), false)
	if got := checkCounts(t, o); got[outbox.StateAccepted] != 4 || got[outbox.StateQueued] != 24 || got[outbox.StateSending] != 1 || got[outbox.StateExpired] != 1 {
		t.Fatalf("counts after the upgrade: %v", got)
	}
	// Lanes numbered in the order of their oldest items.
	rows, err := o.DB().QueryContext(ctx, `SELECT l.lane FROM outbox_lanes l ORDER BY l.id`)
	if err != nil {
		t.Fatal(err)
	}
	var lanes []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		lanes = append(lanes, strings.TrimPrefix(l, "1065403522429"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if want := "[22>237690000010 22>237690000011 22>237690000012 22>237690000013 22>237690000002 23>237690000002 22>237690000000 23>237690000000 " +
		"22>237690000001 23>237690000001 22>237690000020 22>237690000021 22>237690000023 22>237690000022]"; fmt.Sprint(lanes) != want {
		t.Fatalf("lanes in the order of their numbers %v, want %s", lanes, want)
	}
	var unnumbered int
	if err := o.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_items i WHERE lane_no <> (SELECT id FROM outbox_lanes l WHERE l.lane = i.lane)`).Scan(&unnumbered); err != nil || unnumbered != 0 {
		t.Fatalf("%d items without their lane's number (%v)", unnumbered, err)
	}
	// After the upgrade: one more item in an old lane, one in a new lane.
	for to, key := range map[int]string{0: "queued-0-3", 30: "new-0"} {
		m := cloudapi.Text(recipient(to), key)
		m.IdempotencyKey = key
		if _, err := o.Enqueue(ctx, from, m); err != nil {
			t.Fatal(err)
		}
	}

	meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1000), cloudapitest.WithPairRule(50*time.Millisecond, 45, 50*time.Millisecond))
	c := newClient(t, meta, cloudapi.WithPairLimiter(pairlimit.New(fastPairs)))
	runDrain(t, o, c)
	checkCountsByNumber(t, o.DB(), false)
	got := checkCounts(t, o)
	if got[outbox.StateAccepted] != 29 || got[outbox.StateExpired] != 2 || got[outbox.StateSubmittedUnknown] != 1 || got[outbox.StateQueued]+got[outbox.StateSending] != 0 {
		t.Fatalf("counts after draining: %v", got)
	}
	seen := map[string]int{}
	var order []string // the accepted sends, in the order sent
	last := map[string]string{}
	for _, r := range meta.Requests() {
		if !r.Accepted {
			continue
		}
		k := r.CallbackData
		seen[k]++
		order = append(order, k)
		if strings.HasPrefix(k, "queued-") || strings.HasPrefix(k, "other-") {
			lane := k[:len(k)-2]
			if prev := last[lane]; prev != "" && prev > k {
				t.Errorf("lane %s: %s sent after %s", lane, k, prev)
			}
			last[lane] = k
		}
	}
	if last["queued-0"] != "queued-0-3" {
		t.Errorf("lane 0's last send %s, want queued-0-3", last["queued-0"])
	}
	// The burst's lane, in the order sent: burst-0, then the burst whole.
	// (Other lanes' sends may fall between its bubbles: a burst is back
	// to back for its pair, not for the number.)
	var burst []string
	for _, k := range order {
		if strings.HasPrefix(k, "burst-") {
			burst = append(burst, k)
		}
	}
	if fmt.Sprint(burst) != "[burst-0 burst-1 burst-2 burst-3]" {
		t.Errorf("the burst's lane sent %v, want [burst-0 burst-1 burst-2 burst-3] (all sends: %v)", burst, order)
	}
	if len(seen) != 25 || seen["dead-1"] != 1 || seen["new-0"] != 1 {
		t.Fatalf("sent %v, want the 18 queued items of the lanes, the burst's four, dead-1 and the two enqueued after the upgrade", seen)
	}
	for k, n := range seen {
		if n != 1 || strings.HasPrefix(k, "sent-") || k == "dead-0" || k == "late" || k == "cancelled" {
			t.Errorf("%s sent %d times", k, n)
		}
	}
	for key, want := range map[string][]outbox.State{
		"dead-0":     {outbox.StateQueued, outbox.StateSending, outbox.StateSubmittedUnknown},
		"late":       {outbox.StateQueued, outbox.StateExpired},
		"cancelled":  {outbox.StateQueued, outbox.StateExpired},
		"other-1-2":  {outbox.StateQueued, outbox.StateSending, outbox.StateAccepted},
		"sent-3":     {outbox.StateQueued, outbox.StateSending, outbox.StateAccepted},
		"queued-0-3": {outbox.StateQueued, outbox.StateSending, outbox.StateAccepted},
	} {
		var got []outbox.State
		for _, h := range mustGet(t, o, key).History {
			got = append(got, h.State)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: history %v, want %v", key, got, want)
		}
	}
}
