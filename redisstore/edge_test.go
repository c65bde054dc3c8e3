package redisstore

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
	"github.com/wapace/wapace/throughput/throughputstore"
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
	var model pairstore.State
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

// SCRIPT FLUSH, again and again while many goroutines reserve on one pair
// and one number: every decision is made exactly once (EVALSHA's NOSCRIPT
// falls back to EVAL, never running a script twice nor failing), so the
// pair owes exactly the sum of its reservations and their acts never
// overlap, and each number's ticket is a distinct token.
func TestScriptFlushUnderConcurrency(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	p, _ := pairlimit.NewPair("106540352242922", "237690000033")
	th := s.Throughput()
	const workers, each, cost = 16, 25, time.Second
	stop := make(chan struct{})
	flushed := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				flushed <- n
				return
			default:
			}
			if err := s.rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Error(err)
			}
			n++
		}
	}()
	tks := make(chan pairstore.Ticket, workers*each)
	ids := make(chan uint64, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				tk, ok, err := s.Reserve(ctx, p, t0, cost, pairlimit.InfDuration)
				if err != nil || !ok {
					t.Error("pair reserve:", ok, err)
					return
				}
				tks <- tk
				btk, ok, err := th.Reserve(ctx, "106540352242922", t0, 1, time.Millisecond, 1<<20, time.Duration(math.MaxInt64))
				if err != nil || !ok {
					t.Error("bucket reserve:", ok, err)
					return
				}
				ids <- btk.ID
			}
		})
	}
	wg.Wait()
	close(stop)
	t.Logf("%d flushes", <-flushed)
	close(tks)
	close(ids)
	var acts []int64
	for tk := range tks {
		acts = append(acts, tk.Act)
	}
	slices.Sort(acts)
	for i, a := range acts {
		if want := t0.UnixNano() + int64(i)*int64(cost); a != want {
			t.Fatalf("reservation %d of %d acts at +%v, want +%v", i, len(acts), time.Duration(a-t0.UnixNano()), time.Duration(want-t0.UnixNano()))
		}
	}
	st, err := s.pairStateOf(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.UnixNano() + int64(len(acts))*int64(cost); st.Due != want {
		t.Errorf("the pair owes until +%v, want +%v (%d reservations)", time.Duration(st.Due-t0.UnixNano()), time.Duration(want-t0.UnixNano()), len(acts))
	}
	seen := map[uint64]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("bucket ID %d twice", id)
		}
		seen[id] = true
	}
	h, err := s.rdb.HMGet(ctx, th.(*Throughput).bucketKey("106540352242922")[0], "bs", "bn", "tat").Result()
	if err != nil {
		t.Fatal(err)
	}
	var f [3]int64
	for i, x := range h {
		f[i], _ = strconv.ParseInt(fmt.Sprint(x), 10, 64)
	}
	if tat, want := f[0]*1e9+f[1]+f[2], t0.UnixNano()+int64(len(seen))*int64(time.Millisecond); tat != want {
		t.Errorf("the bucket's TAT is +%v, want +%v (%d reservations)", time.Duration(tat-t0.UnixNano()), time.Duration(want-t0.UnixNano()), len(seen))
	}
}

// Many goroutines reserve on one pair and give half of it back at once:
// each give-back that reports true removes exactly its own debt, so the
// pair owes exactly (reserved - given back) x cost.
func TestConcurrentGiveBackIsExact(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	p, _ := pairlimit.NewPair("106540352242922", "237690000034")
	const workers, each, cost = 16, 40, time.Second
	var wg sync.WaitGroup
	var mu sync.Mutex
	reserved, given := 0, 0
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				tk, ok, err := s.Reserve(ctx, p, t0, cost, pairlimit.InfDuration)
				if err != nil || !ok {
					t.Error("reserve:", ok, err)
					return
				}
				back := false
				if (w+i)%2 == 0 {
					if back, err = s.Cancel(ctx, p, t0, tk); err != nil {
						t.Error("cancel:", err)
						return
					}
				}
				mu.Lock()
				reserved++
				if back {
					given++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	st, err := s.pairStateOf(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.UnixNano() + int64(reserved-given)*int64(cost); st.Due != want {
		t.Errorf("the pair owes until +%v, want +%v (%d reserved, %d given back)",
			time.Duration(st.Due-t0.UnixNano()), time.Duration(want-t0.UnixNano()), reserved, given)
	}
	t.Logf("%d reserved, %d given back", reserved, given)
}

// pauseAt makes s's next op (reserve or cancel) on p stop between the
// shadow's step and its script: stopped is closed when it does, and it
// goes on once goOn is closed.
func pauseAt(s *Store, op string, p pairlimit.Pair) (stopped, goOn chan struct{}) {
	stopped, goOn = make(chan struct{}), make(chan struct{})
	var done atomic.Bool
	s.pause = func(o string, q pairlimit.Pair) {
		if o == op && q == p && done.CompareAndSwap(false, true) {
			close(stopped)
			<-goOn
		}
	}
	return stopped, goOn
}

// owesExactly checks that p owes exactly n x cost after t0 in Redis and in
// s's shadow.
func owesExactly(t *testing.T, s *Store, p pairlimit.Pair, n int, cost time.Duration) {
	t.Helper()
	st, err := s.pairStateOf(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := t0.UnixNano() + int64(n)*int64(cost)
	if st.Due != want {
		t.Errorf("the pair owes until +%v, want +%v", time.Duration(st.Due-t0.UnixNano()), time.Duration(want-t0.UnixNano()))
	}
	if f := s.shadow.floor(p); f != want {
		t.Errorf("the shadow's floor is +%v, want +%v", time.Duration(f-t0.UnixNano()), time.Duration(want-t0.UnixNano()))
	}
}

// The two interleavings behind TestConcurrentGiveBackIsExact's rare
// failure, forced. Whichever way each race goes, the pair owes exactly
// what was reserved and not given back, in Redis and in the Store's shadow.
func TestGiveBackRacesAreExact(t *testing.T) {
	const cost = time.Second
	ctx := t.Context()
	reserve := func(t *testing.T, s *Store, p pairlimit.Pair) pairstore.Ticket {
		t.Helper()
		tk, ok, err := s.Reserve(ctx, p, t0, cost, pairlimit.InfDuration)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		return tk
	}
	cancel := func(t *testing.T, s *Store, p pairlimit.Pair, tk pairstore.Ticket) int {
		t.Helper()
		back, err := s.Cancel(ctx, p, t0, tk)
		if err != nil {
			t.Fatal(err)
		}
		if back {
			return 1
		}
		return 0
	}

	// A reservation takes the floor (the Due the latest reservation left);
	// a give-back of that reservation lands in Redis before the
	// reservation's script, which lifted the pair to the stale floor: the
	// debt given back came back.
	t.Run("floor taken, then given back", func(t *testing.T) {
		s := newTestStore(t)
		p, _ := pairlimit.NewPair("106540352242922", "237690000035")
		reserve(t, s, p)
		last := reserve(t, s, p)
		stopped, goOn := pauseAt(s, "reserve", p)
		done := make(chan pairstore.Ticket)
		go func() { done <- reserve(t, s, p) }()
		<-stopped
		given := cancel(t, s, p, last)
		close(goOn)
		tk := <-done
		if want := t0.UnixNano() + int64(3-given)*int64(cost); tk.End != want {
			t.Errorf("the racing reservation ends at +%v, want +%v", time.Duration(tk.End-t0.UnixNano()), time.Duration(want-t0.UnixNano()))
		}
		owesExactly(t, s, p, 3-given, cost)
	})

	// Two give-backs at once, the later ticket's landing first in Redis:
	// the shadow was set to the Due the later ticket found, which still
	// held the earlier ticket's debt, given back a moment later; the next
	// reservation was lifted to it.
	t.Run("two give-backs at once", func(t *testing.T) {
		s := newTestStore(t)
		p, _ := pairlimit.NewPair("106540352242922", "237690000036")
		first := reserve(t, s, p)
		second := reserve(t, s, p)
		stopped, goOn := pauseAt(s, "cancel", p)
		done := make(chan int)
		go func() { done <- cancel(t, s, p, first) }()
		<-stopped
		given := cancel(t, s, p, second)
		close(goOn)
		given += <-done
		tk := reserve(t, s, p)
		if want := t0.UnixNano() + int64(3-given)*int64(cost); tk.End != want {
			t.Errorf("the next reservation ends at +%v, want +%v (%d given back)", time.Duration(tk.End-t0.UnixNano()), time.Duration(want-t0.UnixNano()), given)
		}
		owesExactly(t, s, p, 3-given, cost)
	})
}

// A reservation whose debt saturates is given back like any other, at any
// base the pair has.
func TestPairSaturatedDebtGivenBack(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	for i, at := range []time.Time{t0, t0.Add(123456789), time.Unix(0, 1), time.Unix(9e9, 999999999)} {
		p, _ := pairlimit.NewPair("106540352242922", strconv.Itoa(237690000060+i))
		first, ok, err := s.Reserve(ctx, p, at, 6*time.Second, pairlimit.InfDuration)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		tk, ok, err := s.Reserve(ctx, p, at, pairlimit.InfDuration, pairlimit.InfDuration)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		var model pairstore.State
		model, _ = model.Reserve(at.UnixNano(), 6*time.Second, first.ID)
		_, mt := model.Reserve(at.UnixNano(), pairlimit.InfDuration, tk.ID)
		if tk != mt {
			t.Errorf("%v: ticket %+v, model %+v", at, tk, mt)
		}
		back, err := s.Cancel(ctx, p, at, tk)
		if err != nil || !back {
			t.Errorf("%v: Cancel = %v, %v; want given back", at, back, err)
		}
		if next, err := s.Next(ctx, p, at); err != nil || next.UnixNano() != first.End {
			t.Errorf("%v: Next = %v, %v; want %v", at, next.UnixNano(), err, first.End)
		}
	}
}

// A paused bucket (the interval of a rate of 0, MaxInt64/4) reserved
// again and again without a bound on the wait acts ever later, saturating
// at the largest instant, as throughputstore.BucketState.Reserve does. Its TAT
// passed 2^63 ns from the base and came back from Redis as the smallest
// int64: a reservation to act in 1677, at once.
func TestPausedBucketSaturates(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	th := s.Throughput()
	const interval = time.Duration(math.MaxInt64 / 4)
	var model throughputstore.BucketState
	for i := range 6 {
		tk, ok, err := th.Reserve(ctx, "106540352242922", t0, 1, interval, 1, time.Duration(math.MaxInt64))
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		var mt throughputstore.BucketTicket
		model, mt = model.Reserve(t0.UnixNano(), 1, interval, 1, tk.ID)
		// offsets past 2^53 ns round to the double: a few hundred ns
		if d := tk.Act - mt.Act; d < -1024 || d > 1024 {
			t.Errorf("reservation %d acts at %d, model %d", i, tk.Act, mt.Act)
		}
		if tk.Act < t0.UnixNano() {
			t.Fatalf("reservation %d acts at %v, before it was asked", i, time.Unix(0, tk.Act))
		}
	}
	tk, ok, err := th.Reserve(ctx, "106540352242922", t0, 1, interval, 1, time.Hour)
	if err != nil || ok || tk.Act < model.Next(t0.UnixNano(), 1, interval, 1)-1024 {
		t.Errorf("bounded wait: %+v, %v, %v; want refused, to act at %d", tk, ok, err, model.Next(t0.UnixNano(), 1, interval, 1))
	}
}

// A hold of pairlimit.InfDuration (a policy that never lets a refused
// pair go) is reported as itself and holds the pair for ever, as
// State.Refuse does; Redis answered the hold, a Lua number of 2^63, as the
// smallest int64.
func TestPairEndlessHold(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	p, _ := pairlimit.NewPair("106540352242922", "237690000070")
	holds := []time.Duration{pairlimit.InfDuration}
	got, err := s.Refuse(ctx, p, t0, holds, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	model, want := pairstore.State{}.Refuse(t0.UnixNano(), holds)
	if got != want {
		t.Errorf("Refuse = %v, want %v", got, want)
	}
	next, err := s.Next(ctx, p, t0)
	if err != nil || next.UnixNano() != model.Next(t0.UnixNano()) {
		t.Errorf("Next = %d, %v; want %d", next.UnixNano(), err, model.Next(t0.UnixNano()))
	}
	tk, ok, err := s.Reserve(ctx, p, t0, time.Second, time.Hour)
	if err != nil || ok || tk.Act != model.Next(t0.UnixNano()) {
		t.Errorf("Reserve = %+v, %v, %v; want refused, to act at %d", tk, ok, err, model.Next(t0.UnixNano()))
	}
}

// Many goroutines take tokens from one number's bucket and give half of
// them back at once, while others hold it: each give-back that reports
// true restores exactly its own tokens, so TAT ends (taken - given back)
// intervals after the instant asked.
func TestConcurrentBucketGiveBackIsExact(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	th := s.Throughput().(*Throughput)
	const key, workers, each, interval = "106540352242922", 12, 30, time.Millisecond
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken, given := 0, 0
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if w == 0 {
					if _, err := th.Hold(ctx, key, t0.Add(-time.Second)); err != nil {
						t.Error("hold:", err)
						return
					}
				}
				tk, ok, err := th.Reserve(ctx, key, t0, 1, interval, 1<<20, time.Duration(math.MaxInt64))
				if err != nil || !ok {
					t.Error("reserve:", ok, err)
					return
				}
				back := false
				if (w+i)%2 == 0 {
					if back, err = th.Cancel(ctx, key, t0, tk); err != nil {
						t.Error("cancel:", err)
						return
					}
				}
				mu.Lock()
				taken++
				if back {
					given++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	st := th.bucketStateOf(t, key)
	if want := t0.UnixNano() + int64(taken-given)*int64(interval); st.TAT != want {
		t.Errorf("TAT +%v, want +%v (%d taken, %d given back)", time.Duration(st.TAT-t0.UnixNano()), time.Duration(want-t0.UnixNano()), taken, given)
	}
	t.Logf("%d taken, %d given back", taken, given)
}
