package pairlimit

import (
	"context"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/wapace/wapace/internal/instant"
	"github.com/wapace/wapace/internal/sat"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

// memoryStore is the in-memory [pairstore.Store], the default of every [Limiter]:
// pairs spread over 1,024 shards by a seeded hash, each shard a mutex and,
// per business number, an open-addressing table of 16-byte slots probed
// linearly: the recipient key, and in one word the pair's Due (48 bits of
// nanoseconds from the table's epoch, which moves with time) and Top (a
// 16-bit reservation ID); the rarer 131056 counts and holds, and any Due
// too far ahead for 48 bits, live in a side map. Tables hold no pointers,
// so millions of pairs cost the garbage collector nothing to scan.
//
// Memory is spent only on pairs that still owe or carry a recent 131056
// ([pairstore.State.Expired]): when a table fills to 85 %, it is rebuilt without the
// expired states, at a size that leaves it 70 % full. A rebuild touches one
// shard's table only (a thousandth of the pairs), which bounds the pause of
// the call that triggers it. Between rebuilds, an incremental sweep paced
// by the calls drops expired states, not at once: when few pairs are live,
// expired ones may outnumber them, by up to about 25,000 states in the
// worst pattern measured (every business number holding one pair).
//
// The "now" that expiry is judged at is the earliest of the latest instant
// asked, the store's clock, and that clock moved back by how far behind it
// the instants recently asked of the pair's shard lay (remembered for 5 to
// 10 minutes). So a reservation asked at a future instant never makes
// another pair's debt look repaid: not with a clock in step with the
// instants, nor with a clock ahead of them (a store left on the real clock
// while the instants are simulated), where a state is kept until the clock
// has seen its debt's time pass since it was asked.
//
// Share one memoryStore between Limiters (WithStore) to pace the same pairs
// as one within a process. It is safe for concurrent use. The zero
// memoryStore is ready to use, as NewMemoryStore(nil) but with an unseeded
// hash.
type memoryStore struct {
	clock  clock.Clock
	sc     instant.Scale // turns instants into the nanoseconds kept here (internal/instant)
	seed   uint64        // with the fields above (64 bytes), read on every call: alone on their cache line
	rot    atomic.Uint32 // the last shard a cross-shard sweep visited
	now    atomic.Int64  // the latest instant asked, as last published by a shard
	_      [48]byte      // shards start on a cache line
	shards [memShards]memShard
}

const (
	shardBits = 10
	memShards = 1 << shardBits
	// Tables are rebuilt at 85 % full, to 70 % full (less when the
	// allocation's size class leaves room).
	loadNum, loadDen     = 17, 20
	targetNum, targetDen = 7, 10
	minSlots             = 8
	// failMemory is how long a pair's count of consecutive 131056 answers
	// is kept once its hold has passed with no further send.
	failMemory = 15 * time.Minute
)

// memShard is one shard. Its first cache line holds the lock, the
// reservation IDs and the hot fields of the table of the first business
// number it saw, inline: a call on a one-number limiter touches that one
// line, then its slot. The rest is read by sweeps and other numbers.
type memShard struct {
	mu  sync.Mutex
	seq uint16 // last reservation ID; protected by mu
	ops uint16 // calls since the shard last swept; protected by mu
	// past is the least instant asked since the last timed call's cycle
	// began, in 2^16 ns units from own's epoch (see pastUnit), 0 for none:
	// here, on the lock's line, so that the hot path reads no other line.
	// Protected by mu.
	past uint32
	own  pairTable // the first table; protected by mu

	now int64 // latest instant asked, as of the last sweep step; protected by mu

	// How far behind the clock the instants asked of the shard lie (see
	// saw): lag[0] and lag[1] the least offset (instant minus clock, at
	// most 0) timed in the current and the previous generation, which ends
	// at gen. Protected by mu.
	lag [2]int64
	gen int64

	last *pairTable            // the other table used last; protected by mu
	tabs map[uint64]*pairTable // the other tables, by business number; protected by mu

	// low is a lower bound of every Due in the shard, or 0: written with
	// mu held, read by other shards' sweeps without it, so that a shard
	// where nothing can have expired is passed over without taking its
	// lock. Writing a Due lowers it (pairTable.wrote); a sweep of a
	// shard's only table sets it to the table's floor.
	low atomic.Int64
	_   [16]byte
}

// pairTable holds the pairs of one business number in one shard.
type pairTable struct {
	// Hot: 48 bytes.
	slots []slot
	from  uint64
	live  int32 // occupied slots
	limit int32 // rebuild when live reaches it
	epoch int64 // the instant slot dues count from

	// passWrote gathers the least Due written lower than before during a
	// pass of the sweep; with minDue (at most every Due when the pass
	// began) it bounds every Due in the table from below, so that a sweep
	// that could find nothing expired costs nothing. (A reservation only
	// raises a Due: only new slots and give-backs write it lower.)
	passWrote int64
	minDue    int64
	passMin   int64               // the least Due the current pass kept
	cursor    int32               // next slot the incremental sweep examines
	clk       int64               // the clock when last read by the sweep
	holds     map[uint64]holdInfo // recipients with a 131056 count or hold, or a far Due
	low       *atomic.Int64       // the shard's low
}

// slot is one pair's state; key 0 is empty. w holds Top in its top 16
// bits and Due - epoch in the other 48: 0 for a Due at or before the epoch
// (the pair owes nothing), dueFar for a Due kept in holds.
type slot struct {
	key uint64
	w   uint64
}

const (
	dueBits = 48
	dueMask = 1<<dueBits - 1
	dueFar  = dueMask
	// epochBack is how long before the instants in use a table's epoch
	// lies: a Due up to 19.5 h old is kept exactly, one up to 58 h ahead
	// fits the slot, and the epoch moves on when a table is rebuilt or time
	// has moved on by half the range.
	epochBack = int64(1) << 46
	topMask   = 1<<(64-dueBits) - 1
)

type holdInfo struct {
	hold  int64
	due   int64 // the Due, when the slot says dueFar
	fails uint32
}

// NewMemoryStore returns an empty in-memory store, the one every Limiter
// has by default, that reads the time it judges expiry at from c (the real
// clock if nil). Share one between Limiters (WithStore) to pace the same
// pairs as one within a process. It is safe for concurrent use.
func NewMemoryStore(c clock.Clock) pairstore.Store { return newMemoryStore(c) }

func newMemoryStore(c clock.Clock) *memoryStore {
	if c == nil {
		c = clock.New()
	}
	// The clock's own scale: on the real clock, its monotonic readings,
	// which a step of the wall clock does not move. Every Limiter sharing
	// the store (in this process) converts its instants with it.
	return &memoryStore{clock: c, sc: instant.Of(c.Now()), seed: rand.Uint64() | 1}
}

// clockNow reads the store's clock: the real one for a zero memoryStore.
func (m *memoryStore) clockNow() int64 {
	if m.clock == nil {
		return time.Now().UnixNano()
	}
	return m.sc.Nanos(m.clock.Now())
}

// hash returns p's hash: the top bits pick the shard, the next ones the
// slot. One multiplication by an odd constant of the seeded key: the high
// bits of the product depend on every bit of the key.
func (m *memoryStore) hash(from, to uint64) uint64 {
	x := to ^ m.seed ^ from*0xc4ceb9fe1a85ec53
	x ^= x >> 29
	return x * 0x9E3779B97F4A7C15
}

// lock locks the shard of pair (from, to) and returns it with its hash.
// Pairs travel as their two keys in the store: the Pair also carries a
// hashed BSUID's string, which the store never needs.
func (m *memoryStore) lock(from, to uint64) (*memShard, uint64) {
	h := m.hash(from, to)
	sh := &m.shards[h>>(64-shardBits)]
	sh.mu.Lock()
	return sh, h << shardBits
}

// table returns the shard's table of business number from, or nil. Called
// with sh.mu held.
func (sh *memShard) table(from uint64) *pairTable {
	if sh.own.from == from {
		return &sh.own
	}
	if tb := sh.last; tb != nil && tb.from == from {
		return tb
	}
	tb := sh.tabs[from]
	if tb != nil {
		sh.last = tb
	}
	return tb
}

// slotOf returns the index of key in tb, or of the empty slot where it
// belongs, and whether it is there.
func (tb *pairTable) slotOf(key, hb uint64) (int, bool) {
	n := len(tb.slots)
	if n == 0 {
		return -1, false
	}
	hi, _ := bits.Mul64(hb, uint64(n))
	i := int(hi)
	for {
		s := &tb.slots[i]
		if s.key == key {
			return i, true
		}
		if s.key == 0 {
			return i, false
		}
		if i++; i == n {
			i = 0
		}
	}
}

// find returns p's slot, or nil. Called with sh.mu held.
func (sh *memShard) find(p Pair, hb uint64) (*pairTable, *slot) {
	tb := sh.table(p.from)
	if tb == nil {
		return nil, nil
	}
	i, ok := tb.slotOf(p.to, hb)
	if !ok {
		return tb, nil
	}
	return tb, &tb.slots[i]
}

// get returns the slot of pair (from, to), adding it (owing nothing) if
// missing. Called with sh.mu held.
func (m *memoryStore) get(sh *memShard, from, to, hb uint64, t int64) (*pairTable, *slot) {
	tb := sh.table(from)
	if tb == nil {
		tb = m.newTable(sh, from, t)
	}
	i, ok := tb.slotOf(to, hb)
	if !ok && tb.live >= tb.limit {
		m.rebuild(sh, tb, int(tb.live)+1)
		i, _ = tb.slotOf(to, hb)
	}
	if t <= tb.epoch {
		// A Due written at t could end at or before the epoch, which a
		// slot holds as "owes nothing", and be lost to every call asking
		// before it: move the epoch back first, as far behind t as a new
		// table's lies. The epoch lies this far ahead only when the table
		// began with an instant far ahead of the ones asked since, and
		// the clock too, or when the horizon moved far past the instants
		// asked: once per 19.5 h of instants further back at most. The
		// pair's own state may go, expired.
		m.rebuildAt(sh, tb, int(tb.live)+1, m.horizon(sh), sat.Sub(t, epochBack))
		i, ok = tb.slotOf(to, hb)
	}
	if ok {
		return tb, &tb.slots[i]
	}
	tb.live++
	s := &tb.slots[i]
	*s = slot{key: to} // owes nothing
	return tb, s
}

// newTable adds an empty table for from, first dropping a table of another
// number whose pairs have all expired (one per new table, round robin), so
// that tables of numbers no longer used do not pile up. Called with sh.mu
// held.
func (m *memoryStore) newTable(sh *memShard, from uint64, t int64) *pairTable {
	now := m.horizon(sh)
	n := 0
	for k, tb := range sh.tabs {
		if n++; n > 2 {
			break
		}
		if tb.live == 0 || len(tb.slots) <= 64 && tb.allExpired(now) {
			sh.drop(k, tb)
		}
	}
	tb := &sh.own
	if tb.from != 0 {
		if sh.tabs == nil {
			sh.tabs = make(map[uint64]*pairTable)
		}
		tb = new(pairTable)
		sh.tabs[from] = tb
		sh.last = tb
	}
	clk := m.clockNow()
	*tb = pairTable{from: from, clk: clk, epoch: sat.Sub(min(t, clk), epochBack),
		minDue: math.MaxInt64, passMin: math.MaxInt64, passWrote: math.MaxInt64, low: &sh.low}
	if tb == &sh.own {
		sh.past = 0 // it counted from the old epoch: time the next call
	}
	return tb
}

// drop forgets table tb of number from. Called with sh.mu held.
func (sh *memShard) drop(from uint64, tb *pairTable) {
	if tb == &sh.own {
		sh.own = pairTable{epoch: tb.epoch} // the epoch stays, the base of sh.past
		return
	}
	delete(sh.tabs, from)
	if sh.last == tb {
		sh.last = nil
	}
}

// due returns the Due of s without its side entry, and whether it is in
// the side map instead.
func (tb *pairTable) due(s *slot) (int64, bool) {
	switch d := s.w & dueMask; d {
	case 0:
		return math.MinInt64, false
	case dueFar:
		return 0, true
	default:
		return tb.epoch + int64(d), false
	}
}

// encode returns the slot bits of due, and whether it must go to the side
// map: a Due at or before the epoch owes nothing at any instant in use.
func (tb *pairTable) encode(due int64) (uint64, bool) {
	if due <= tb.epoch {
		return 0, false
	}
	if off := uint64(due) - uint64(tb.epoch); off < dueFar {
		return off, false
	}
	return dueFar, true
}

// wrote records that a slot's Due became d.
func (tb *pairTable) wrote(d int64) {
	tb.passWrote = min(tb.passWrote, d)
	if tb.low != nil && d < tb.low.Load() {
		tb.low.Store(d)
	}
}

// floor returns a lower bound of every Due in the table.
func (tb *pairTable) floor() int64 { return min(tb.minDue, tb.passWrote) }

func (tb *pairTable) state(s *slot) pairstore.State {
	due, far := tb.due(s)
	st := pairstore.State{Due: due, Top: s.w >> dueBits}
	if tb.holds != nil {
		if h, ok := tb.holds[s.key]; ok {
			st.Hold, st.Fails = h.hold, h.fails
			if far {
				st.Due = h.due
			}
		}
	}
	return st
}

// set stores st in s. Called with the shard's mu held.
func (tb *pairTable) set(s *slot, st pairstore.State) {
	d, far := tb.encode(st.Due)
	s.w = (st.Top&topMask)<<dueBits | d
	tb.wrote(st.Due)
	if st.Fails == 0 && st.Hold == 0 && !far {
		if tb.holds != nil {
			delete(tb.holds, s.key)
		}
		return
	}
	if tb.holds == nil {
		tb.holds = make(map[uint64]holdInfo)
	}
	tb.holds[s.key] = holdInfo{hold: st.Hold, fails: st.Fails, due: st.Due}
}

func (tb *pairTable) allExpired(now int64) bool {
	for i := range tb.slots {
		s := &tb.slots[i]
		if s.key != 0 && !tb.state(s).Expired(now, failMemory) {
			return false
		}
	}
	return true
}

// timeEvery is how many calls to a shard (counted as its sweeps count
// them) one timed call at least covers: a multiple of sweepEvery.
const timeEvery = 4 * sweepEvery

// lagMemory is how long a shard remembers how far behind its clock the
// instants asked of it lay: at least this long, at most twice. It exceeds
// Meta's longest debt (a burst of 45, 270 s, plus the margin) and hold
// (256 s).
const lagMemory = 5 * time.Minute

// saw records that a call asked the shard at instant t: the first call of
// every timeEvery to the shard (counted as its sweeps count them), and any
// call asking earlier than every call since (to 2^16 ns), read the clock
// to time how far behind it t lies (one call in 64 in steady traffic: a
// clock read costs as much as the rest of a call). A call not timed asked
// no earlier than 2^16 ns before one timed at most timeEvery calls before
// it. Called with sh.mu held.
func (m *memoryStore) saw(sh *memShard, t int64) {
	if p := sh.past; p == 0 || pastUnit(t, sh.own.epoch) < p {
		m.timeCall(sh, t)
	}
}

// pastUnit is t in 2^16 ns units from epoch, own's (0 when the shard has
// no first table), for memShard.past: 0 for an instant before the epoch
// (or without one), which is then always timed; capped at the largest
// uint32 (58 h past the epoch: far ahead of any clock the epoch came from,
// where a lag is positive and counts for nothing).
func pastUnit(t, epoch int64) uint32 {
	if t < epoch || epoch == 0 {
		return 0
	}
	return uint32(min(uint64(t-epoch)>>16, math.MaxUint32))
}

// timeCall is saw's timing of a call. It is kept out of the callers'
// bodies, so that their common path spills nothing around it.
//
//go:noinline
func (m *memoryStore) timeCall(sh *memShard, t int64) {
	sh.past = pastUnit(t, sh.own.epoch)
	clk := m.clockNow()
	sh.rotate(clk)
	if o := sat.Sub(t, clk); o < sh.lag[0] {
		sh.lag[0] = o
	}
}

// rotate starts a new generation of the shard's lag once the current one
// has lasted lagMemory. Called with sh.mu held.
func (sh *memShard) rotate(clk int64) {
	if clk >= sh.gen {
		sh.lag[1], sh.lag[0] = sh.lag[0], 0
		sh.gen = sat.Add(clk, int64(lagMemory))
	}
}

// present is the shard's present at clock reading clk: the clock moved
// back by how far behind it the shard's recent calls asked. Called with
// sh.mu held.
func (sh *memShard) present(clk int64) int64 {
	return sat.Add(clk, min(sh.lag[0], sh.lag[1]))
}

// horizon is the instant expiry is judged at: the earliest of the latest
// instant asked in the shard, the clock, and the shard's present (the clock
// moved back by how far behind it the shard's recent calls asked). Called
// with sh.mu held.
func (m *memoryStore) horizon(sh *memShard) int64 {
	clk := m.clockNow()
	sh.rotate(clk)
	return min(sh.now, sh.present(clk))
}

// rebuild rehashes tb without its expired states, sized so that its
// surviving states, plus the states need adds to the live count (get: one;
// a sweep: none), fill 70 % of it, and moves its epoch forward to
// epochBack before now.
// Called with sh.mu held.
func (m *memoryStore) rebuild(sh *memShard, tb *pairTable, need int) {
	now := m.horizon(sh)
	m.rebuildAt(sh, tb, need, now, max(tb.epoch, sat.Sub(now, epochBack)))
}

// rebuildAt is rebuild judging expiry at now and counting slot Dues from
// epoch, earlier or later than tb's: a Due too far ahead of it for a slot
// moves to the side map. Called with sh.mu held.
func (m *memoryStore) rebuildAt(sh *memShard, tb *pairTable, need int, now, epoch int64) {
	if tb.holds == nil && epoch == tb.epoch {
		m.regrow(tb, now, need) // the common case: slot words move as they are
		return
	}
	old := tb.slots
	states := make([]pairstore.State, 0, int(tb.live)) // the survivors, in order
	for i := range old {
		s := &old[i]
		if s.key == 0 {
			continue
		}
		st := tb.state(s)
		if st.Expired(now, failMemory) {
			if tb.holds != nil {
				delete(tb.holds, s.key)
			}
			s.key = 0
			continue
		}
		states = append(states, st)
	}
	tb.resize(len(states) + max(need-int(tb.live), 0)) // need counts the live states: 0 adds none
	if tb == &sh.own && epoch != tb.epoch {
		sh.past = 0 // it counted from the old epoch: time the next call
	}
	tb.epoch = epoch
	k := 0
	for i := range old {
		if s := old[i]; s.key != 0 {
			st := states[k]
			k++
			tb.minDue = min(tb.minDue, st.Due)
			j, _ := tb.slotOf(s.key, m.hash(tb.from, s.key)<<shardBits)
			tb.slots[j].key = s.key
			tb.set(&tb.slots[j], st)
			tb.live++
		}
	}
	tb.passWrote = math.MaxInt64
	if len(tb.holds) == 0 {
		tb.holds = nil
	}
}

// regrow is rebuild for a table with no side entries whose epoch stays:
// expired slots are dropped and the others move word for word.
func (m *memoryStore) regrow(tb *pairTable, now int64, need int) {
	limit := now - int64(pairstore.KeepAfterDue)
	old := tb.slots
	live := 0
	for i := range old {
		s := &old[i]
		if s.key == 0 {
			continue
		}
		if d := s.w & dueMask; d == 0 || tb.epoch+int64(d) <= limit {
			s.key = 0 // expired: owes nothing, no 131056 count
			continue
		}
		live++
	}
	tb.resize(live + max(need-int(tb.live), 0))
	for i := range old {
		if s := old[i]; s.key != 0 {
			tb.minDue = min(tb.minDue, tb.epoch+int64(s.w&dueMask))
			j, _ := tb.slotOf(s.key, m.hash(tb.from, s.key)<<shardBits)
			tb.slots[j] = s
			tb.live++
		}
	}
}

// resize gives tb an empty array for need states at 70 % full (a whole
// allocation size class) and resets its counts and sweep.
func (tb *pairTable) resize(need int) {
	n := max(need*targetDen/targetNum+1, minSlots)
	tb.slots = slices.Grow([]slot(nil), n) // a whole size class: no slack wasted
	n = cap(tb.slots)
	tb.slots = tb.slots[:n]
	tb.live, tb.cursor = 0, 0
	tb.limit = int32(min(n*loadNum/loadDen, math.MaxInt32))
	tb.minDue, tb.passMin, tb.passWrote = math.MaxInt64, math.MaxInt64, math.MaxInt64
}

// Incremental sweep: every sweepEvery calls to a table examine sweepSlots
// of its slots, and every crossEvery calls to a shard examine crossSlots
// slots of the next shards in turn, so that a full pass over n slots takes
// about n calls whatever their pattern, shards no call reaches included.
// Expired states are not dropped at once, and when few states are live
// they outnumber them: in the worst pattern, every business number holding
// one pair (a table of 8 slots each) and never called again, with Meta's
// policy, TestSweepBoundOnePairPerNumber measured at most about 64,000
// expired states beside 70,000 live ones (10,000 new pairs a second),
// 21,600 beside 7,000 (1,000 a second) and 16,200 beside 700 (100 a
// second), within 2 % across hash seeds: expired states stay below the
// live ones plus about 25,000.
const (
	sweepEvery = 16
	sweepSlots = 16
	crossEvery = 32
	crossSlots = 64
)

// step counts a call asked at t that used tb and, every sweepEvery calls
// to the shard, records t as the shard's latest instant and sweeps tb, and
// every crossEvery calls other shards. Called with sh.mu held, after the
// call is done with its slot.
func (m *memoryStore) step(sh *memShard, tb *pairTable, t int64) {
	if sh.ops++; sh.ops%sweepEvery != 0 {
		return
	}
	m.sweepStep(sh, tb, t)
}

// sweepStep is step's work on every sweepEvery-th call. Called with sh.mu
// held.
func (m *memoryStore) sweepStep(sh *memShard, tb *pairTable, t int64) {
	sh.now = max(sh.now, t)
	if sh.ops%timeEvery == 0 {
		sh.past = 0 // the next call is timed
	}
	m.sweep(sh, tb, sweepSlots)
	if sh.ops%crossEvery == 0 {
		m.cross(sh)
	}
}

// cross sweeps the tables of the next shards in turn (sh's own other
// tables included when its turn comes), skipping shards whose lock is
// taken, and those whose low bound says nothing can have expired (one
// atomic load instead of taking the lock). The turn moves on once per call
// by the shards visited: two sweeps at once may visit the same shards and
// pass over as many others for a turn. Called with sh.mu held: TryLock
// never waits, so shards never deadlock.
func (m *memoryStore) cross(sh *memShard) {
	for {
		cur := m.now.Load()
		if cur >= sh.now || m.now.CompareAndSwap(cur, sh.now) {
			break
		}
	}
	limit := max(sh.now, m.now.Load()) - int64(pairstore.KeepAfterDue)
	budget := crossSlots
	next := m.rot.Load()
	visits := uint32(0)
	for ; budget > 0 && visits < 8; visits++ {
		o := &m.shards[(next+visits+1)%memShards]
		if limit < o.low.Load() {
			budget-- // nothing can have expired, as sweep would find
			continue
		}
		if o != sh && !o.mu.TryLock() {
			continue
		}
		if o.own.from != 0 {
			budget -= m.sweep(o, &o.own, min(budget, len(o.own.slots)))
		}
		for _, tb := range o.tabs { // the others, from a random one
			if budget <= 0 {
				break
			}
			budget -= m.sweep(o, tb, min(budget, len(tb.slots)))
		}
		if o != sh { // sh is the caller's, locked already
			o.mu.Unlock()
		}
	}
	m.rot.Add(visits)
}

// sweep examines up to k slots from the cursor, deleting expired states,
// and returns how many it examined (at least 1). When the cursor wraps
// around it refreshes the clock, shrinks a table that is less than a
// quarter full and drops an empty one. Called with sh.mu held.
func (m *memoryStore) sweep(sh *memShard, tb *pairTable, k int) int {
	asked := max(sh.now, m.now.Load())
	if min(asked, tb.clk)-tb.epoch > 2*epochBack && m.horizon(sh)-tb.epoch > 2*epochBack {
		m.rebuild(sh, tb, 0) // time moved on: move the epoch with it
		return len(tb.slots)
	}
	floor := tb.floor()
	if tb == &sh.own && len(sh.tabs) == 0 && sh.low.Load() != floor {
		sh.low.Store(floor) // it bounds every Due in the shard
	}
	if asked-int64(pairstore.KeepAfterDue) < floor {
		return 1 // nothing can have expired
	}
	if tb.clk-int64(pairstore.KeepAfterDue) < floor {
		tb.clk = m.clockNow()
		if tb.clk-int64(pairstore.KeepAfterDue) < floor {
			return 1
		}
	}
	now := min(asked, sh.present(tb.clk))
	limit := now - int64(pairstore.KeepAfterDue)
	done := 0
	for ; done < k; done++ {
		if int(tb.cursor) >= len(tb.slots) {
			tb.cursor = 0
			tb.clk = m.clockNow()
			tb.minDue = min(tb.passMin, tb.passWrote)
			tb.passMin, tb.passWrote = math.MaxInt64, math.MaxInt64
			switch {
			case tb.live == 0:
				sh.drop(tb.from, tb)
			case len(tb.slots) > 2*minSlots && tb.live < tb.limit/4:
				m.rebuild(sh, tb, 0)
			}
			return done + 1
		}
		s := &tb.slots[int(tb.cursor)]
		if s.key != 0 {
			due, far := tb.due(s)
			if far || due <= limit {
				st := tb.state(s)
				if st.Expired(now, failMemory) {
					tb.delete(int(tb.cursor), m)
					continue // the hole may have been filled: look again
				}
				due = st.Due
			}
			tb.passMin = min(tb.passMin, due)
		}
		tb.cursor++
	}
	return max(done, 1)
}

// delete empties slot i and shifts back the slots of its cluster that may
// move (backward-shift deletion), so that no tombstone is left.
func (tb *pairTable) delete(i int, m *memoryStore) {
	if tb.holds != nil {
		delete(tb.holds, tb.slots[i].key)
	}
	n := len(tb.slots)
	j := i
	for {
		if j++; j == n {
			j = 0
		}
		s := tb.slots[j]
		if s.key == 0 {
			break
		}
		hi, _ := bits.Mul64(m.hash(tb.from, s.key)<<shardBits, uint64(n))
		home := int(hi)
		// s may move to i when i lies on its probe path, from home to j.
		if (j-home+n)%n >= (j-i+n)%n {
			tb.slots[i] = s
			i = j
		}
	}
	tb.slots[i] = slot{}
	tb.live--
}

// nextID returns a fresh 16-bit reservation ID, never 0. IDs come round
// after 65,535 reservations in the shard; State.Cancel's Due check keeps a
// stale ticket from matching. Called with sh.mu held.
func (m *memoryStore) nextID(sh *memShard) uint64 {
	sh.seq++
	if sh.seq == 0 {
		sh.seq = 1
	}
	return uint64(sh.seq)
}

// reserve is Reserve without the interface. It does not allocate, except
// when a table grows.
func (m *memoryStore) reserve(p Pair, t int64, cost, maxWait time.Duration) (pairstore.Ticket, bool) {
	return m.reserveKeys(p.from, p.to, t, cost, maxWait)
}

func (m *memoryStore) reserveKeys(from, to uint64, t int64, cost, maxWait time.Duration) (pairstore.Ticket, bool) {
	h := m.hash(from, to)
	sh := &m.shards[h>>(64-shardBits)]
	sh.mu.Lock()
	return m.reserveLocked(sh, from, to, h<<shardBits, t, cost, maxWait)
}

// reserveLocked is reserveKeys after the lock, and the general path of
// Limiter.ReserveN's hot path: a new pair, a Due kept in the side map, a
// table other than the last used, a maximum wait. Called with sh.mu held;
// it unlocks it.
func (m *memoryStore) reserveLocked(sh *memShard, from, to, hb uint64, t int64, cost, maxWait time.Duration) (pairstore.Ticket, bool) {
	m.saw(sh, t)
	tb, s := m.get(sh, from, to, hb, t)
	due, far := tb.due(s)
	old := pairstore.State{Due: due, Top: s.w >> dueBits}
	if far {
		old = tb.state(s)
	}
	if old.Next(t) > sat.Add(t, int64(maxWait)) {
		m.step(sh, tb, t)
		sh.mu.Unlock()
		return pairstore.Ticket{Act: old.Next(t)}, false
	}
	st, tk := old.Reserve(t, cost, m.nextID(sh))
	if d, farNow := tb.encode(st.Due); !far && !farNow {
		if s.w&dueMask == 0 {
			tb.wrote(st.Due) // a Due rises from nothing: the sweep must know
		}
		s.w = st.Top<<dueBits | d
	} else {
		full := tb.state(s)
		full.Due, full.Top = st.Due, st.Top
		tb.set(s, full)
	}
	m.step(sh, tb, t)
	sh.mu.Unlock()
	return tk, true
}

func (m *memoryStore) next(p Pair, t int64) int64 {
	sh, hb := m.lock(p.from, p.to)
	m.saw(sh, t)
	tb, s := sh.find(p, hb)
	due := int64(math.MinInt64)
	if s != nil {
		due = tb.state(s).Due
	}
	sh.mu.Unlock()
	return pairstore.State{Due: due}.Next(t)
}

func (m *memoryStore) cancel(p Pair, t int64, tk pairstore.Ticket) bool {
	sh, hb := m.lock(p.from, p.to)
	defer sh.mu.Unlock()
	if t != math.MinInt64 { // MinInt64 is Refund's "whatever the time"
		m.saw(sh, t)
	}
	tb, s := sh.find(p, hb)
	if s == nil || tk.ID > math.MaxUint32 {
		return false
	}
	st, ok := tb.state(s).Cancel(tk, t)
	if ok {
		tb.set(s, st)
	}
	m.step(sh, tb, t)
	return ok
}

func (m *memoryStore) refuse(p Pair, t int64, holds []time.Duration) time.Duration {
	sh, hb := m.lock(p.from, p.to)
	defer sh.mu.Unlock()
	m.saw(sh, t)
	tb, s := m.get(sh, p.from, p.to, hb, t)
	st, hold := tb.state(s).Refuse(t, holds)
	tb.set(s, st)
	m.step(sh, tb, t)
	return hold
}

func (m *memoryStore) accept(p Pair, t int64) {
	sh, hb := m.lock(p.from, p.to)
	defer sh.mu.Unlock()
	m.saw(sh, t)
	tb, s := sh.find(p, hb)
	if s != nil && tb.holds != nil {
		if st := tb.state(s); st.Fails != 0 {
			tb.set(s, st.Accept())
		}
	}
	if tb != nil {
		m.step(sh, tb, t)
	}
}

// Len returns the number of pairs the store holds state for, expired ones
// not yet dropped included.
func (m *memoryStore) Len() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += int(sh.own.live)
		for _, tb := range sh.tabs {
			n += int(tb.live)
		}
		sh.mu.Unlock()
	}
	return n
}

// Reserve implements [pairstore.Store]; it fails only on a pair that is
// not one (the zero Pair, or strings NewPair rejects).
func (m *memoryStore) Reserve(_ context.Context, sp pairstore.Pair, t time.Time, cost, maxWait time.Duration) (pairstore.Ticket, bool, error) {
	p, err := storePair(sp)
	if err != nil {
		return pairstore.Ticket{}, false, err
	}
	tk, ok := m.reserve(p, m.sc.Nanos(t), cost, maxWait)
	return m.outTicket(tk), ok, nil
}

// outTicket turns a ticket's instants from the store's scale to the
// wall clock's, which a caller through the Store interface keeps (a
// Limiter given a store that wraps this one, as redisstore's local
// fallback does); inTicket turns them back. On the wall clock's scale, or
// while the wall clock was not stepped, they change nothing.
func (m *memoryStore) outTicket(tk pairstore.Ticket) pairstore.Ticket {
	if m.sc.Monotonic() {
		tk.PrevDue, tk.Act, tk.End = m.wall(tk.PrevDue), m.wall(tk.Act), m.wall(tk.End)
	}
	return tk
}

func (m *memoryStore) inTicket(tk pairstore.Ticket) pairstore.Ticket {
	if m.sc.Monotonic() {
		tk.PrevDue, tk.Act, tk.End = m.own(tk.PrevDue), m.own(tk.Act), m.own(tk.End)
	}
	return tk
}

// wall returns the instant ns of the store's scale in the wall clock's
// nanoseconds, and own the reverse (0, no instant, stays 0).
func (m *memoryStore) wall(ns int64) int64 {
	if ns == 0 {
		return 0
	}
	return m.sc.Time(ns).UnixNano()
}

func (m *memoryStore) own(ns int64) int64 {
	if ns == 0 {
		return 0
	}
	return m.sc.Nanos(time.Unix(0, ns))
}

// Next implements [pairstore.Store], failing as Reserve does.
func (m *memoryStore) Next(_ context.Context, sp pairstore.Pair, t time.Time) (time.Time, error) {
	p, err := storePair(sp)
	if err != nil {
		return time.Time{}, err
	}
	return m.sc.Time(m.next(p, m.sc.Nanos(t))), nil
}

// Cancel implements [pairstore.Store], failing as Reserve does.
func (m *memoryStore) Cancel(_ context.Context, sp pairstore.Pair, t time.Time, tk pairstore.Ticket) (bool, error) {
	p, err := storePair(sp)
	if err != nil {
		return false, err
	}
	return m.cancel(p, m.sc.Nanos(t), m.inTicket(tk)), nil
}

// Refuse implements [pairstore.Store], failing as Reserve does. The
// memory store keeps a
// pair's 131056 count for 15 minutes after its hold, whatever memory says.
func (m *memoryStore) Refuse(_ context.Context, sp pairstore.Pair, t time.Time, holds []time.Duration, _ time.Duration) (time.Duration, error) {
	p, err := storePair(sp)
	if err != nil {
		return 0, err
	}
	return m.refuse(p, m.sc.Nanos(t), holds), nil
}

// Accept implements [pairstore.Store], failing as Reserve does.
func (m *memoryStore) Accept(_ context.Context, sp pairstore.Pair, t time.Time) error {
	p, err := storePair(sp)
	if err != nil {
		return err
	}
	m.accept(p, m.sc.Nanos(t))
	return nil
}

// storePair returns the Pair behind a pairstore.Pair: itself when it is one
// (the limiter always passes its own), or parsed again from its strings.
// A store never fails on a Pair the limiter gives it; the error is for a
// pairstore.Pair of another kind whose strings are not a pair.
func storePair(sp pairstore.Pair) (Pair, error) {
	if p, ok := sp.(Pair); ok {
		if p.IsZero() {
			return Pair{}, ErrZeroPair
		}
		return p, nil
	}
	return NewPair(sp.From(), sp.To())
}
