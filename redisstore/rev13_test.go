package redisstore

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
)

// A debt that saturates (a cost of pairlimit.InfDuration, as
// Limiter.cost gives for a burst whose intervals overflow) keeps the pair
// owing for ever, as State.Reserve's saturating sum does: the next
// reservation waits (refused under a bounded maxWait) and Next says so.
// The state's offset, a double of 2^63 or more, read as an int64 became
// math.MinInt64, and the Go side told the caller to act at once while the
// script refused.
func TestPairSaturatedDebtStaysOwed(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	p, _ := pairlimit.NewPair("106540352242922", "237690000031")
	if _, ok, err := s.Reserve(ctx, p, t0, pairlimit.InfDuration, pairlimit.InfDuration); err != nil || !ok {
		t.Fatal(ok, err)
	}
	var model pairlimit.State
	model, _ = model.Reserve(t0.UnixNano(), pairlimit.InfDuration, 1)
	at := t0.Add(time.Second)
	tk, ok, err := s.Reserve(ctx, p, at, time.Second, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if ok || tk.Act != model.Next(at.UnixNano()) {
		t.Errorf("Reserve after a saturated debt: ok %v, act %d; want refused, act %d", ok, tk.Act, model.Next(at.UnixNano()))
	}
	next, err := s.Next(ctx, p, at)
	if err != nil {
		t.Fatal(err)
	}
	if next.UnixNano() != model.Next(at.UnixNano()) {
		t.Errorf("Next = %d, want %d", next.UnixNano(), model.Next(at.UnixNano()))
	}
	// without a bound on the wait it is reserved, to act at the end of time
	tk, ok, err = s.Reserve(ctx, p, at, time.Second, pairlimit.InfDuration)
	if err != nil || !ok || tk.Act != math.MaxInt64 || tk.End != math.MaxInt64 {
		t.Errorf("unbounded Reserve: %+v, %v, %v; want act and end at the end of time", tk, ok, err)
	}
}

// Whatever the Go side reports of a reservation is what the script did:
// reported reserved, the pair's Top is the ticket's ID and it owes the
// ticket's End; reported refused, the state is unchanged. Debts and waits
// beyond 2^53 ns (104 days), where the script's doubles round, and callers
// more than 104 days before the state's base, where the offset itself
// rounds, included.
func TestPairReserveReportsWhatTheScriptDid(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(13, 7))
	const day = int64(24 * time.Hour)
	for i := range 300 {
		p, _ := pairlimit.NewPair("106540352242922", strconv.Itoa(237691100000+i))
		base := t0.Add(time.Duration(rng.Int64N(1e9)))
		cost := time.Duration(rng.Int64N(400*day) + 1)
		if _, ok, err := s.Reserve(ctx, p, base, cost, pairlimit.InfDuration); err != nil || !ok {
			t.Fatal(ok, err)
		}
		before, err := s.pairStateOf(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		at := base.Add(-time.Duration(rng.Int64N(300 * day)))
		wait := before.Due - at.UnixNano() + rng.Int64N(17) - 8
		tk, ok, err := s.Reserve(ctx, p, at, time.Second, time.Duration(max(wait, 0)))
		if err != nil {
			t.Fatal(err)
		}
		after, err := s.pairStateOf(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ok && (after.Top != tk.ID || after.Due != tk.End):
			t.Errorf("case %d: reported reserved (ID %d, End %d), Redis holds Top %d, Due %d", i, tk.ID, tk.End, after.Top, after.Due)
		case !ok && after != before:
			t.Errorf("case %d: reported refused (wait %d), Redis went from %+v to %+v", i, wait, before, after)
		}
	}
}

// IDs stay distinct across 2^53 microseconds (June 2255): once the
// highest reached 2^53, hw + 1 rounded back to it in a double.
func TestPairIDsStayDistinctAcross2to53(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	p, _ := pairlimit.NewPair("106540352242922", "237690000032")
	at := time.Unix(0, (1<<53-2)*1000)
	seen := map[uint64]bool{}
	var tops []uint64
	for i := range 4 {
		tk, ok, err := s.Reserve(ctx, p, at.Add(time.Duration(i)*time.Microsecond), time.Second, pairlimit.InfDuration)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		st, err := s.pairStateOf(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if seen[tk.ID] || st.Top != tk.ID {
			t.Errorf("reservation %d: ID %d (seen before: %v), Redis's Top %d", i, tk.ID, seen[tk.ID], st.Top)
		}
		seen[tk.ID] = true
		tops = append(tops, st.Top)
	}
	t.Log(tops)
}
