package redisstore_test

import (
	"testing"
	"time"

	"github.com/wapace/wapace/internal/redistest"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/redisstore"
)

// A server that lost the scripts (SCRIPT FLUSH, a restart, a failover to a
// replica that never ran them) still decides: EVALSHA's NOSCRIPT falls back
// to EVAL, which also loads the script again.
func TestDecidesAfterScriptFlush(t *testing.T) {
	rdb := redistest.Client(t)
	st := redisstore.New(rdb, redisstore.WithPrefix(redistest.Prefix(t)))
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(st))
	p, _ := pairlimit.NewPair("106540352242922", "237690000001")
	at := time.Now()
	var acts []time.Time
	for i := range 2 {
		if err := rdb.ScriptFlush(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		r := lim.ReserveN(at, p, 1)
		if !r.OK() {
			t.Fatalf("reservation %d after SCRIPT FLUSH: %v", i, r.Err())
		}
		acts = append(acts, r.TimeToAct())
	}
	if !acts[1].After(acts[0]) {
		t.Errorf("the second reservation acts at %v, not after the first's %v", acts[1], acts[0])
	}
	// and the next decision finds the script loaded again
	if r := lim.ReserveN(at, p, 1); !r.OK() || !r.TimeToAct().After(acts[1]) {
		t.Errorf("third reservation: ok %v, acts at %v after %v: %v", r.OK(), r.TimeToAct(), acts[1], r.Err())
	}
}

// Reservations asked after 2255, where microseconds no longer fit a
// double's 53 bits, still get distinct IDs (each one above the last).
func TestPairIDsStayDistinctAfter2255(t *testing.T) {
	rdb := redistest.Client(t)
	st := redisstore.New(rdb, redisstore.WithPrefix(redistest.Prefix(t)))
	p, _ := pairlimit.NewPair("106540352242922", "237690000001")
	at := time.Date(2260, 1, 1, 0, 0, 0, 0, time.UTC)
	var last uint64
	for i := range 3 {
		tk, ok, err := st.Reserve(t.Context(), p, at, time.Second, pairlimit.InfDuration)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if tk.ID <= last {
			t.Fatalf("reservation %d: ID %d, not above %d", i, tk.ID, last)
		}
		last = tk.ID
	}
}
