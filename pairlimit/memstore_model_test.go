package pairlimit

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"pgregory.net/rapid"

	"github.com/wapace/wapace/pairlimit/pairstore"
)

// memModel is an independent model of what a memoryStore must answer: per
// pair the exact debt, hold, 131056 count and the reservation on top, kept
// for ever, and written from the package doc's rules rather than with
// State's methods. The store may forget a pair only once the pair's state
// is expired at the model's horizon (see horizon: never later than the
// clock, the latest instant asked, or the clock moved back by how far
// behind it the pair's shard was recently asked); the model then accepts
// either answer (the remembered state's or the zero state's) and follows
// the one the store gave.
type memModel struct {
	pairs   map[Pair]*modelPair
	asked   int64 // the latest instant asked
	nextRes int   // the model's own reservation IDs
	store   *memoryStore
	shards  map[uint64]*modelShard
}

// modelShard is what the model knows of the calls to one of the store's
// shards: which calls go together is the store's hash, the rule the
// model's own. The store times a call's lag (instant minus clock) only for
// the first call of every timeEvery it counts (a shard counts the calls
// that reserve, refuse, give back or accept) and for calls asking earlier
// than every call since (to 2^16 ns). So a call's lag is known to the
// store as no later than its instant plus 2^16 ns minus the clock of the
// timeEvery-th such call before it (or of the shard's first call): the
// model's lag for the call.
type modelShard struct {
	first int64   // the clock at the shard's first call
	steps []int64 // the clock at each call the store surely counts, the last timeEvery
	lags  []modelLag
}

// modelLag is the least lag of the calls to one shard whose lag was
// judged against one clock reading, from.
type modelLag struct{ from, lag int64 }

// ask records a call for p asked at t with the clock at clk; step says
// whether the store surely counts it towards its shard's sweep (reserve
// and refuse do; a give-back or an accept may not, and counting fewer
// makes the model's lags only later).
func (m *memModel) ask(p Pair, t, clk int64, step bool) {
	m.asked = max(m.asked, t)
	h := m.store.hash(p.from, p.to) >> (64 - shardBits)
	sh := m.shards[h]
	if sh == nil {
		sh = &modelShard{first: clk}
		m.shards[h] = sh
	}
	from := sh.first
	if len(sh.steps) == timeEvery {
		from = sh.steps[0]
	}
	lag := t - from + 1<<16 // the store compares instants to 2^16 ns
	if n := len(sh.lags); n > 0 && sh.lags[n-1].from == from {
		sh.lags[n-1].lag = min(sh.lags[n-1].lag, lag)
	} else {
		sh.lags = append(sh.lags, modelLag{from, lag})
	}
	if step {
		if len(sh.steps) == timeEvery {
			sh.steps = sh.steps[1:]
		}
		sh.steps = append(sh.steps, clk)
	}
}

// horizon is the latest instant at which the store may judge p's expiry:
// the earliest of the latest instant asked, the clock, and the clock moved
// back by the least lag of the calls to p's shard in the last lagMemory.
func (m *memModel) horizon(p Pair, clk int64) int64 {
	lag := int64(0)
	if sh := m.shards[m.store.hash(p.from, p.to)>>(64-shardBits)]; sh != nil {
		for _, l := range sh.lags {
			if l.from >= clk-int64(lagMemory) {
				lag = min(lag, l.lag)
			}
		}
	}
	return min(m.asked, clk, clk+lag)
}

type modelPair struct {
	due, hold int64
	fails     int
	top       int // the model ID of the reservation on top, 0 if none
	// mayForget: the pair was forgettable at some call since the model
	// last followed the store in forgetting it, so the store may hold a
	// state with the same debt but another reservation on top.
	mayForget bool
}

// modelRes is one reservation as the model sees it.
type modelRes struct {
	id          int
	pair        Pair
	prevTop     int
	prevDue     int64
	act, end    int64
	tk          pairstore.Ticket // the store's ticket
	lim         Reservation      // or the limiter's reservation
	fromLimiter bool
}

func (m *memModel) get(p Pair) *modelPair {
	mp := m.pairs[p]
	if mp == nil {
		mp = &modelPair{due: math.MinInt64}
		m.pairs[p] = mp
	}
	return mp
}

// forgettable reports whether the store may have forgotten mp, p's state,
// by now.
func (m *memModel) forgettable(p Pair, mp *modelPair, clk int64) bool {
	limit := m.horizon(p, clk) - int64(pairstore.KeepAfterDue)
	ok := mp.due <= limit && (mp.fails == 0 || mp.hold <= limit-int64(failMemory))
	mp.mayForget = mp.mayForget || ok
	return ok
}

// next is when a burst asked at t may start.
func (mp *modelPair) next(t int64) int64 { return max(t, mp.due) }

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// reserve books a burst of debt cost at t on mp.
func (m *memModel) reserve(mp *modelPair, p Pair, t int64, cost time.Duration) *modelRes {
	m.nextRes++
	act := mp.next(t)
	r := &modelRes{id: m.nextRes, pair: p, prevTop: mp.top, prevDue: mp.due, act: act, end: satAdd(act, int64(cost))}
	mp.due, mp.top = r.end, r.id
	return r
}

// cancel gives r back at t if it is on top, unspent and its debt is still
// what it left; it reports whether it did.
func (mp *modelPair) cancel(r *modelRes, t int64) bool {
	if mp.top != r.id || t > r.act || mp.due != max(r.end, mp.hold) {
		return false
	}
	mp.due, mp.top = max(r.prevDue, mp.hold), r.prevTop
	return true
}

// refuse applies a 131056 at t: Meta's 4^X hold.
func (mp *modelPair) refuse(t int64) time.Duration {
	hold := time.Second << (2 * min(mp.fails, 4))
	mp.hold = max(mp.hold, satAdd(t, int64(hold)))
	mp.due = max(mp.due, mp.hold)
	mp.fails++
	return hold
}

// modelClock is a clock the test sets.
type modelClock struct {
	clock.Clock
	now int64
}

func (c *modelClock) Now() time.Time { return time.Unix(0, c.now) }

// TestPropertyMemoryStoreMatchesModel holds the memory store, reached
// through a Limiter's hot path and through the Store interface, to the
// model above over random hash seeds (so random shard and slot layouts),
// random clock moves (seconds to days, so that epochs move and tables are
// swept and rebuilt), and random instants: slightly past, present, minutes
// to days ahead, as cloudapi asks at a number's future slot. Besides
// single calls on a few pairs it makes bulk calls: thousands of
// reservations for other pairs at one instant, which grow and rebuild
// tables and sweep shards. Every answer must be the model's, or, for a
// pair the model says may have been forgotten, the zero state's.
func TestPropertyMemoryStoreMatchesModel(t *testing.T) {
	t.Parallel()
	rapid.Check(t, checkMemoryStoreModel)
}

func checkMemoryStoreModel(t *rapid.T) {
	ctx := context.Background()
	// now is the callers' present, which the instants they pass are
	// relative to; the store's clock is that present, or ahead of it (a
	// store left on the real clock while the instants are simulated, or a
	// wrong clock), or stuck where it started.
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
	now := start
	var skew int64
	stuck := false
	switch rapid.IntRange(0, 3).Draw(t, "clock") {
	case 1:
		skew = rapid.Int64Range(1, int64(72*time.Hour)).Draw(t, "clock ahead")
	case 2:
		stuck = true
	}
	clk := &modelClock{Clock: clock.NewMock(), now: now + skew}
	seed := rapid.Uint64().Draw(t, "seed") | 1
	store := &memoryStore{clock: clk, seed: seed}
	margin := time.Duration(rapid.SampledFrom([]int64{0, int64(DefaultMargin), 999_999_999}).Draw(t, "margin"))
	lim := New(Meta, WithClock(clk), WithStore(store), WithMargin(margin))
	if lim.mem != store {
		t.Fatal("the limiter does not use the store's hot path")
	}
	numbers := []uint64{1001, 106540352242922, 1003}
	var focus []Pair
	for _, f := range numbers {
		for i := range 4 {
			focus = append(focus, Pair{from: f, to: 237690000001 + uint64(i)})
		}
	}
	m := &memModel{pairs: make(map[Pair]*modelPair), asked: math.MinInt64, store: store, shards: make(map[uint64]*modelShard)}
	var bulk []Pair // every pair a bulk call used
	var made []*modelRes
	nextBulk := uint64(0)

	instant := func(label string) int64 {
		switch rapid.IntRange(0, 5).Draw(t, label+" when") {
		case 0: // slightly past, within what the store keeps
			return now - rapid.Int64Range(0, int64(pairstore.KeepAfterDue)).Draw(t, label+" back")
		case 1, 2:
			return now
		case 3: // seconds to an hour ahead
			return now + rapid.Int64Range(0, int64(time.Hour)).Draw(t, label+" ahead")
		case 4: // minutes
			return now + rapid.Int64Range(1, 30).Draw(t, label+" minutes")*int64(time.Minute)
		default: // up to four days ahead: beyond what a slot holds
			return now + rapid.Int64Range(0, int64(96*time.Hour)).Draw(t, label+" far")
		}
	}
	// check compares the store's answer for mp with the model's, or the
	// zero state's where the model allows it; it reports whether the store
	// answered from the zero state (the model then forgets mp).
	check := func(what string, p Pair, mp *modelPair, got, want, zero int64) bool {
		if got == want {
			return false
		}
		if got == zero && m.forgettable(p, mp, clk.now) {
			return true
		}
		t.Fatalf("%s %v: store answers %+.3fs, model %+.3fs (zero state %+.3fs; pair due %+.3fs, hold %+.3fs, fails %d; present %+.3fs, clock %+.3fs, latest asked %+.3fs, model horizon %+.3fs; seed %#x)",
			what, p, sec(got-start), sec(want-start), sec(zero-start), sec(mp.due-start), sec(mp.hold-start), mp.fails,
			sec(now-start), sec(clk.now-start), sec(m.asked-start), sec(m.horizon(p, clk.now)-start), seed)
		return false
	}
	forget := func(p Pair) { m.pairs[p] = &modelPair{due: math.MinInt64} }
	// state returns the model's state of p, noting whether the store may
	// forget it now.
	state := func(p Pair) *modelPair {
		mp := m.get(p)
		m.forgettable(p, mp, clk.now)
		return mp
	}

	reserve := func(p Pair, at int64, n int, viaLimiter bool) {
		m.ask(p, at, clk.now, true)
		mp := state(p)
		cost := lim.cost(n)
		zero := &modelPair{due: math.MinInt64}
		var got, gotEnd int64
		var res Reservation
		var tk pairstore.Ticket
		if viaLimiter {
			res = lim.ReserveN(time.Unix(0, at), p, n)
			if !res.OK() {
				t.Fatalf("ReserveN(%v, %d) not OK: %v", p, n, res.Err())
			}
			got, gotEnd = res.tk.Act, res.tk.End
		} else {
			var ok bool
			var err error
			tk, ok, err = store.Reserve(ctx, p, time.Unix(0, at), cost, InfDuration)
			if err != nil || !ok {
				t.Fatalf("Reserve(%v): %v %v", p, ok, err)
			}
			got, gotEnd = tk.Act, tk.End
		}
		if check("reserve", p, mp, got, mp.next(at), zero.next(at)) {
			forget(p)
			mp = state(p)
		}
		r := m.reserve(mp, p, at, cost)
		if gotEnd != r.end {
			t.Fatalf("reserve %v: the store's debt ends at %+.3fs, the model's at %+.3fs", p, sec(gotEnd-start), sec(r.end-start))
		}
		r.tk, r.lim, r.fromLimiter = tk, res, viaLimiter
		made = append(made, r)
	}

	steps := rapid.IntRange(1, 60).Draw(t, "steps")
	for range steps {
		switch rapid.IntRange(0, 12).Draw(t, "op") {
		case 0, 1, 2: // reserve a focus pair
			p := rapid.SampledFrom(focus).Draw(t, "pair")
			n := rapid.IntRange(1, 45).Draw(t, "n")
			reserve(p, instant("reserve"), n, rapid.Bool().Draw(t, "via limiter"))
		case 3: // a bulk of reservations for other pairs at one instant
			at := instant("bulk")
			k := rapid.IntRange(1, 12_000).Draw(t, "bulk size")
			reuse := rapid.Bool().Draw(t, "reuse") && len(bulk) > 0
			nums := rapid.IntRange(1, len(numbers)).Draw(t, "bulk numbers")
			for i := range k {
				var p Pair
				if reuse {
					p = bulk[i%len(bulk)]
				} else {
					nextBulk++
					p = Pair{from: numbers[i%nums], to: 4915100000000 + nextBulk}
					bulk = append(bulk, p)
				}
				m.ask(p, at, clk.now, true)
				mp := state(p)
				res := lim.ReserveN(time.Unix(0, at), p, 1)
				if check("bulk reserve", p, mp, res.tk.Act, mp.next(at), at) {
					forget(p)
					mp = state(p)
				}
				m.reserve(mp, p, at, lim.cost(1))
			}
		case 4: // give one back
			if len(made) == 0 {
				continue
			}
			r := rapid.SampledFrom(made).Draw(t, "give back")
			p := r.pair
			at := instant("cancel")
			if rapid.Bool().Draw(t, "refund") {
				at = math.MinInt64
			} else {
				m.ask(p, at, clk.now, false)
			}
			mp := state(p)
			wasForgettable := m.forgettable(p, mp, clk.now)
			var got bool
			if r.fromLimiter {
				got = r.lim.cancel(at)
			} else {
				got, _ = store.Cancel(ctx, p, time.Unix(0, at), r.tk)
			}
			want := mp.cancel(r, at)
			if got != want {
				switch {
				case got:
					t.Fatalf("cancel %v at %+.3fs: store gave back %v, model %v (seed %#x)", p, sec(at-start), got, want, seed)
				case wasForgettable:
					forget(p)
				case mp.mayForget: // forgotten earlier: the same debt, not this reservation on top
					mp.due, mp.top = max(r.end, mp.hold), 0 // undo the model's give-back
				default:
					t.Fatalf("cancel %v at %+.3fs: store gave back %v, model %v (seed %#x)", p, sec(at-start), got, want, seed)
				}
			}
		case 5: // a 131056
			p := rapid.SampledFrom(focus).Draw(t, "refused")
			at := instant("refuse")
			m.ask(p, at, clk.now, true)
			mp := state(p)
			zero := modelPair{due: math.MinInt64}
			zeroHold := zero.refuse(at)
			wasForgettable := m.forgettable(p, mp, clk.now)
			want := mp.refuse(at)
			got := lim.Refused(time.Unix(0, at), p)
			if got != want {
				if got != zeroHold || !wasForgettable {
					t.Fatalf("refuse %v: store holds %v, model %v (seed %#x)", p, got, want, seed)
				}
				m.pairs[p] = &zero
			}
		case 6: // an accepted message
			p := rapid.SampledFrom(focus).Draw(t, "accepted")
			at := instant("accept")
			m.ask(p, at, clk.now, false)
			lim.Accepted(time.Unix(0, at), p)
			m.get(p).fails = 0
		case 7, 8: // time moves on
			var d int64
			switch rapid.IntRange(0, 3).Draw(t, "move") {
			case 0:
				d = rapid.Int64Range(0, int64(10*time.Second)).Draw(t, "seconds")
			case 1:
				d = rapid.Int64Range(0, int64(20*time.Minute)).Draw(t, "minutes")
			case 2:
				d = rapid.Int64Range(0, int64(30*time.Hour)).Draw(t, "hours")
			default:
				d = rapid.Int64Range(0, int64(100*time.Hour)).Draw(t, "days")
			}
			now += d
			if !stuck {
				clk.now += d
			}
		default: // read-only queries
			p := rapid.SampledFrom(focus).Draw(t, "ready")
			at := instant("ready")
			m.ask(p, at, clk.now, false)
			mp := state(p)
			got, _ := lim.ReadyAt(time.Unix(0, at), p, 1)
			if check("ready", p, mp, got.UnixNano(), mp.next(at), at) {
				forget(p)
			}
		}
	}
	// Every pair the model knows, focus and bulk, asked at the present.
	for p, mp := range m.pairs {
		m.ask(p, now, clk.now, false)
		check("final", p, mp, store.next(p, now), mp.next(now), now)
	}
}

func sec(d int64) float64 { return float64(d) / 1e9 }
