// Package pairlimittest is the conformance kit for implementations of
// [pairstore.Store]: one suite that the in-memory store, the Redis store and
// anyone's own store run alike.
//
//	func TestMyStore(t *testing.T) {
//		pairlimittest.TestStore(t, func(t *testing.T) pairstore.Store { return mystore.New(...) })
//	}
//
// The suite checks that every method applies exactly the pure
// [pairstore.State] method its documentation names (random calls at past,
// present and future instants, compared with the model answer by answer),
// and that several [pairlimit.Limiter]s sharing one store from many
// goroutines pace overlapping pairs as one: every schedule they hand out,
// less what was given back, is accepted by Meta's rule as [pairlimit.Replay]
// models it.
package pairlimittest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

// t0 is where the suite's instants start.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestStore runs the conformance suite against the stores newStore returns.
// Each call of newStore must return an empty store (or one whose pairs the
// suite has not used: the suite picks its own business numbers per
// subtest), usable for the rest of the subtest.
func TestStore(t *testing.T, newStore func(t *testing.T) pairstore.Store) {
	t.Run("Model", func(t *testing.T) { testModel(t, newStore(t)) })
	t.Run("PairsAreIndependent", func(t *testing.T) { testIndependent(t, newStore(t)) })
	t.Run("NextChangesNothing", func(t *testing.T) { testNext(t, newStore(t)) })
	t.Run("FailsOutliveHold", func(t *testing.T) { testFailsOutliveHold(t, newStore(t)) })
	t.Run("RepaidDebtOutOfOrder", func(t *testing.T) { testRepaidOutOfOrder(t, newStore(t)) })
	t.Run("SharedLimiters", func(t *testing.T) { testShared(t, newStore(t)) })
	t.Run("BurstMovedToItsWrite", func(t *testing.T) { testMoved(t, newStore(t)) })
	t.Run("FarAheadGivenBack", func(t *testing.T) { testFarAheadGivenBack(t, newStore(t)) })
}

func pair(t *testing.T, from, to int) pairlimit.Pair {
	t.Helper()
	p, err := pairlimit.NewPair(fmt.Sprint(106540352242000+from), fmt.Sprint(237690000000+to))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var holds = []time.Duration{time.Second, 4 * time.Second, 16 * time.Second, 64 * time.Second, 256 * time.Second}

// testModel drives random calls, comparing each answer with the State model.
func testModel(t *testing.T, s pairstore.Store) {
	ctx := context.Background()
	// Time moves on across seeds: a store may forget a pair once instants
	// asked of it have passed its due (State.Expired).
	now := t0
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := pair(t, int(seed), int(seed))
		var model pairstore.State
		var tickets [][2]pairstore.Ticket // the store's and the model's
		ids := map[uint64]bool{}
		now = now.Add(time.Hour + time.Duration(rng.Int64N(1e9)))
		for step := range 400 {
			now = now.Add(time.Duration(rng.Int64N(int64(4*time.Second))) - time.Second)
			at := now.Add(time.Duration(rng.Int64N(int64(10*time.Second))) - 2*time.Second)
			where := func() string { return fmt.Sprintf("seed %d step %d", seed, step) }
			switch k := rng.IntN(10); {
			case k < 5:
				cost := time.Duration(1+rng.IntN(3))*6*time.Second + 250*time.Millisecond
				maxWait := pairlimit.InfDuration
				if rng.IntN(3) == 0 {
					maxWait = time.Duration(rng.Int64N(int64(10 * time.Second)))
				}
				tk, ok, err := s.Reserve(ctx, p, at, cost, maxWait)
				if err != nil {
					t.Fatalf("%s: Reserve: %v", where(), err)
				}
				want := model.Next(at.UnixNano())
				wantOK := maxWait == pairlimit.InfDuration || want-at.UnixNano() <= int64(maxWait)
				if ok != wantOK || tk.Act != want {
					t.Fatalf("%s: Reserve = ok %v act %d; model ok %v act %d", where(), ok, tk.Act, wantOK, want)
				}
				if !ok {
					continue
				}
				if tk.ID == 0 || ids[tk.ID] {
					t.Fatalf("%s: Reserve handed out ID %d, zero or already used", where(), tk.ID)
				}
				ids[tk.ID] = true
				// Tickets are opaque: the model keeps its own, with the
				// store's ID, and each side cancels with its own.
				var mt pairstore.Ticket
				model, mt = model.Reserve(at.UnixNano(), cost, tk.ID)
				tickets = append(tickets, [2]pairstore.Ticket{tk, mt})
			case k < 7 && len(tickets) > 0:
				tks := tickets[rng.IntN(len(tickets))]
				got, err := s.Cancel(ctx, p, at, tks[0])
				if err != nil {
					t.Fatalf("%s: Cancel: %v", where(), err)
				}
				var want bool
				model, want = model.Cancel(tks[1], at.UnixNano())
				if got != want {
					t.Fatalf("%s: Cancel = %v, model %v", where(), got, want)
				}
			case k < 8:
				got, err := s.Refuse(ctx, p, at, holds, 15*time.Minute)
				if err != nil {
					t.Fatalf("%s: Refuse: %v", where(), err)
				}
				var want time.Duration
				model, want = model.Refuse(at.UnixNano(), holds)
				if got != want {
					t.Fatalf("%s: Refuse = %v, model %v", where(), got, want)
				}
			case k < 9:
				if err := s.Accept(ctx, p, at); err != nil {
					t.Fatalf("%s: Accept: %v", where(), err)
				}
				model = model.Accept()
			default:
			}
			got, err := s.Next(ctx, p, at)
			if err != nil {
				t.Fatalf("%s: Next: %v", where(), err)
			}
			if want := model.Next(at.UnixNano()); got.UnixNano() != want {
				t.Fatalf("%s: Next = %d, model %d", where(), got.UnixNano(), want)
			}
		}
	}
}

func testIndependent(t *testing.T, s pairstore.Store) {
	ctx := context.Background()
	a, b, c := pair(t, 10, 1), pair(t, 10, 2), pair(t, 11, 1)
	if _, ok, err := s.Reserve(ctx, a, t0, time.Minute, pairlimit.InfDuration); !ok || err != nil {
		t.Fatalf("Reserve: %v %v", ok, err)
	}
	if _, err := s.Refuse(ctx, a, t0, holds, 15*time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, p := range []pairlimit.Pair{b, c} {
		tk, ok, err := s.Reserve(ctx, p, t0, time.Minute, 0)
		if !ok || err != nil || tk.Act != t0.UnixNano() {
			t.Errorf("%v waits for another pair's debt: %+v %v %v", p, tk, ok, err)
		}
	}
}

func testNext(t *testing.T, s pairstore.Store) {
	ctx := context.Background()
	p := pair(t, 20, 1)
	for range 3 {
		if at, err := s.Next(ctx, p, t0); err != nil || !at.Equal(t0) {
			t.Fatalf("Next on a fresh pair = %v %v, want t0", at, err)
		}
	}
	tk, _, _ := s.Reserve(ctx, p, t0, 6*time.Second, pairlimit.InfDuration)
	for range 3 {
		if at, _ := s.Next(ctx, p, t0); !at.Equal(t0.Add(6 * time.Second)) {
			t.Fatalf("Next = %v, want t0+6s", at)
		}
	}
	if ok, _ := s.Cancel(ctx, p, t0, tk); !ok {
		t.Error("Next left the reservation unable to be given back")
	}
}

// testFailsOutliveHold checks that a pair's count of 131056 answers
// outlives its hold and its debt for memory (Refuse's argument), as
// State.Expired requires: the next 131056 within it holds longer.
func testFailsOutliveHold(t *testing.T, s pairstore.Store) {
	ctx := context.Background()
	p := pair(t, 21, 1)
	at := t0
	for i, want := range holds[:4] {
		got, err := s.Refuse(ctx, p, at, holds, 15*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("131056 number %d, after the previous hold and debt had passed: hold %v, want %v (the count was forgotten)", i+1, got, want)
		}
		at = at.Add(want + 10*time.Minute) // debt repaid, within memory
	}
	if err := s.Accept(ctx, p, at); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Refuse(ctx, p, at, holds, 15*time.Minute); err != nil || got != holds[0] {
		t.Fatalf("131056 after an acceptance: hold %v %v, want %v", got, err, holds[0])
	}
}

// testRepaidOutOfOrder checks that a pair's debt, once the latest instant
// asked has passed it, is still seen by a call whose instant arrives up to
// KeepAfterDue late (State.Expired), however much traffic came between.
func testRepaidOutOfOrder(t *testing.T, s pairstore.Store) {
	ctx := context.Background()
	const cost = 6*time.Second + 250*time.Millisecond
	for round := range 10 {
		at := t0.Add(10*time.Hour + time.Duration(round)*time.Minute)
		p := pair(t, 22, round)
		if _, ok, err := s.Reserve(ctx, p, at, cost, pairlimit.InfDuration); !ok || err != nil {
			t.Fatalf("Reserve: %v %v", ok, err)
		}
		due := at.Add(cost)
		later := due.Add(pairstore.KeepAfterDue / 2) // the latest instant asked: p's debt is repaid
		for i := range 100 {
			if _, _, err := s.Reserve(ctx, pair(t, 23, round*100+i), later, time.Second, pairlimit.InfDuration); err != nil {
				t.Fatal(err)
			}
		}
		late := due.Add(-pairstore.KeepAfterDue / 4) // arrives out of order
		tk, ok, err := s.Reserve(ctx, p, late, cost, pairlimit.InfDuration)
		if err != nil || !ok || tk.Act != due.UnixNano() {
			t.Fatalf("round %d: a call %v before the debt's end, after later traffic, acts at %v, want %v: the debt was forgotten",
				round, pairstore.KeepAfterDue/4, time.Unix(0, tk.Act).Sub(at), cost)
		}
	}
}

// testShared runs several limiters over s from many goroutines, on a few
// overlapping pairs, reserving, cancelling and refunding at shuffled
// instants, and checks what would have been sent against Meta's rule.
func testShared(t *testing.T, s pairstore.Store) {
	const (
		limiters   = 4
		goroutines = 16
		perG       = 150
		recipients = 5
	)
	lims := make([]*pairlimit.Limiter, limiters)
	for i := range lims {
		lims[i] = pairlimit.New(pairlimit.Meta, pairlimit.WithStore(s))
	}
	pairs := make([]pairlimit.Pair, recipients)
	for i := range pairs {
		pairs[i] = pair(t, 30, i)
	}
	var clock atomic.Int64 // ns after t0: a shared "now" that moves forward
	var mu sync.Mutex
	sent := make(map[pairlimit.Pair][]time.Time)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 11))
			lim := lims[g%limiters]
			for range perG {
				now := t0.Add(time.Duration(clock.Add(rng.Int64N(int64(300 * time.Millisecond)))))
				// Instants arrive a little out of order, as from several hosts.
				at := now.Add(-time.Duration(rng.Int64N(int64(50 * time.Millisecond))))
				p := pairs[rng.IntN(len(pairs))]
				n := 1 + rng.IntN(3)
				r := lim.ReserveN(at, p, n)
				if !r.OK() {
					t.Errorf("ReserveN: %v", r.Err())
					return
				}
				switch rng.IntN(6) {
				case 0:
					r.CancelAt(at) // gave back, or the slot stays spent: either way nothing is sent
					continue
				case 1:
					r.Refund()
					continue
				}
				mu.Lock()
				for range n {
					sent[p] = append(sent[p], r.TimeToAct())
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	total := 0
	for p, times := range sent {
		total += len(times)
		for i, v := range pairlimit.Replay(pairlimit.Meta, times) {
			if !v.Accepted {
				t.Fatalf("%v: send %d at %v would draw 131056 (burst of %d from %v)", p, i, v.At, v.BurstLen, v.BurstStart)
			}
		}
	}
	if total == 0 {
		t.Fatal("nothing was reserved")
	}
}

// testMoved is the Client's write-time move of a burst: reserved at t, its
// first bubble written 1 s late, the reservation is given back (Refund,
// after its instant) and reserved again at the write, so that the pair is
// due from when the burst reached Meta: the write plus n intervals plus
// the margin, exactly.
func testMoved(t *testing.T, s pairstore.Store) {
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(s))
	p := pair(t, 7, 7)
	r := lim.ReserveN(t0, p, 3)
	if !r.OK() {
		t.Fatal(r.Err())
	}
	wrote := t0.Add(time.Second)
	r.Refund()
	moved := lim.ReserveN(wrote, p, 3)
	if !moved.OK() || !moved.TimeToAct().Equal(wrote) {
		t.Fatalf("moved reservation acts at +%v (ok %v), want +1s", moved.TimeToAct().Sub(t0), moved.OK())
	}
	next, err := lim.ReadyAt(wrote, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := wrote.Add(3*pairlimit.Meta.Interval + lim.Margin()); !next.Equal(want) {
		t.Fatalf("the pair is due at +%v, want +%v (the write, 3 x 6 s and the margin)", next.Sub(t0), want.Sub(t0))
	}
}

// testFarAheadGivenBack checks that a debt written at the present is kept
// after a business number's first call asked two days ahead and was given
// back: a cloudapi caller reserves at a number's future slot, and a store
// that counts its instants from a base set by the first call must still
// hold instants before that base exactly (the memory store lost them when
// its clock was ahead of the instants, as the real clock is of t0).
func testFarAheadGivenBack(t *testing.T, s pairstore.Store) {
	ctx := context.Background()
	const cost = 6*time.Second + 250*time.Millisecond
	far := t0.Add(48 * time.Hour)
	for i, refuse := range []bool{false, true} {
		p := pair(t, 40+i, 1) // a number never asked before
		tk, ok, err := s.Reserve(ctx, p, far, cost, pairlimit.InfDuration)
		if err != nil || !ok {
			t.Fatalf("Reserve two days ahead: %v %v", ok, err)
		}
		if back, err := s.Cancel(ctx, p, t0, tk); err != nil || !back {
			t.Fatalf("give-back at the present: %v %v", back, err)
		}
		want := t0.Add(cost)
		if refuse {
			hold, err := s.Refuse(ctx, p, t0, holds, 15*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			want = t0.Add(hold)
		} else if tk, ok, err := s.Reserve(ctx, p, t0, cost, pairlimit.InfDuration); err != nil || !ok || tk.Act != t0.UnixNano() {
			t.Fatalf("Reserve at the present after the give-back: act +%v %v %v, want +0s", time.Unix(0, tk.Act).Sub(t0), ok, err)
		}
		if got, err := s.Next(ctx, p, t0); err != nil || !got.Equal(want) {
			t.Fatalf("refused %v: Next = +%v %v, want +%v: the debt written at the present was lost", refuse, got.Sub(t0), err, want.Sub(t0))
		}
	}
}
