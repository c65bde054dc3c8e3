package pairlimit

import (
	"context"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// MemoryStore is the in-memory [Store], the default of every [Limiter]:
// pairs spread over 1,024 shards by a seeded hash, each shard a mutex and,
// per business number, an open-addressing table of 24-byte slots (recipient
// key, Due, Top, flags) probed linearly; the rarer 131056 counts and holds
// live in a side map. Tables hold no pointers, so millions of pairs cost the
// garbage collector nothing to scan.
//
// Memory is spent only on pairs that still owe or carry a recent 131056
// ([State.Expired]): when a table fills to 80 %, it is rebuilt without the
// expired states, at a size that leaves it 64 % full. A rebuild touches one
// shard's table only (a thousandth of the pairs), which bounds the pause of
// the call that triggers it. The "now" that expiry is judged at is the
// earlier of the latest instant a call was asked at and the store's clock,
// so a reservation asked at a future instant never makes another pair's
// debt look repaid.
//
// Share one MemoryStore between Limiters (WithStore) to pace the same pairs
// as one within a process. It is safe for concurrent use. The zero
// MemoryStore is not usable; build it with NewMemoryStore.
type MemoryStore struct {
	clock  clock.Clock
	seed   uint64
	rot    atomic.Uint32 // the next shard a cross-shard sweep visits
	now    atomic.Int64  // the latest instant asked, as last published by a shard
	shards [memShards]memShard
}

const (
	shardBits = 10
	memShards = 1 << shardBits
	// Tables are rebuilt at 80 % full, to 64 % full.
	loadNum, loadDen     = 4, 5
	targetNum, targetDen = 16, 25
	minSlots             = 8
	// failMemory is how long a pair's count of consecutive 131056 answers
	// is kept once its hold has passed with no further send.
	failMemory = 15 * time.Minute
)

type memShard struct {
	mu   sync.Mutex
	last *pairTable            // the table used last; protected by mu
	tabs map[uint64]*pairTable // by business number; protected by mu
	now  int64                 // latest instant a call was asked at; protected by mu
	seq  uint32                // last reservation ID; protected by mu
	ops  uint32                // calls since the last cross-shard sweep; protected by mu
	_    [24]byte              // one cache line per shard
}

// pairTable holds the pairs of one business number in one shard.
type pairTable struct {
	from   uint64
	slots  []slot
	live   int                 // occupied slots
	limit  int                 // rebuild when live reaches it
	cursor int                 // next slot the incremental sweep examines
	clk    int64               // the clock when the sweep last wrapped around
	ops    uint32              // calls since the last sweep step
	holds  map[uint64]holdInfo // recipients with a 131056 count or hold
}

// slot is one pair's state; key 0 is empty.
type slot struct {
	key   uint64
	due   int64
	top   uint32
	flags uint32 // flagHold: the pair has an entry in holds
}

const flagHold = 1

type holdInfo struct {
	hold  int64
	fails uint32
}

// NewMemoryStore returns an empty in-memory store that reads the time it
// judges expiry at from c (the real clock if nil).
func NewMemoryStore(c clock.Clock) *MemoryStore {
	if c == nil {
		c = clock.New()
	}
	return &MemoryStore{clock: c, seed: rand.Uint64() | 1}
}

func fmix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// hash returns p's hash: the top bits pick the shard, the rest the slot.
func (m *MemoryStore) hash(from, to uint64) uint64 {
	return fmix(to ^ from*0x9E3779B97F4A7C15 ^ m.seed)
}

// lock locks p's shard and returns it with its hash.
func (m *MemoryStore) lock(p Pair, t int64) (*memShard, uint64) {
	h := m.hash(p.from, p.to)
	sh := &m.shards[h>>(64-shardBits)]
	sh.mu.Lock()
	sh.now = max(sh.now, t)
	return sh, h << shardBits
}

// table returns the shard's table of business number from, or nil. Called
// with sh.mu held.
func (sh *memShard) table(from uint64) *pairTable {
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

// get returns p's slot, adding it (owing nothing) if missing. Called with
// sh.mu held.
func (m *MemoryStore) get(sh *memShard, p Pair, hb uint64) (*pairTable, *slot) {
	tb := sh.table(p.from)
	if tb == nil {
		tb = m.newTable(sh, p.from)
	}
	i, ok := tb.slotOf(p.to, hb)
	if ok {
		return tb, &tb.slots[i]
	}
	if tb.live >= tb.limit {
		m.rebuild(sh, tb, tb.live+1)
		i, _ = tb.slotOf(p.to, hb)
	}
	tb.live++
	s := &tb.slots[i]
	*s = slot{key: p.to, due: math.MinInt64}
	return tb, s
}

// newTable adds an empty table for from, first dropping a table of another
// number whose pairs have all expired (one per new table, round robin), so
// that tables of numbers no longer used do not pile up. Called with sh.mu
// held.
func (m *MemoryStore) newTable(sh *memShard, from uint64) *pairTable {
	if sh.tabs == nil {
		sh.tabs = make(map[uint64]*pairTable)
	}
	if len(sh.tabs) > 0 {
		now := m.horizon(sh)
		n := 0
		for k, tb := range sh.tabs {
			if n++; n > 2 {
				break
			}
			if tb.live == 0 || len(tb.slots) <= 64 && tb.allExpired(now) {
				delete(sh.tabs, k)
				if sh.last == tb {
					sh.last = nil
				}
			}
		}
	}
	tb := &pairTable{from: from, clk: m.clock.Now().UnixNano()}
	sh.tabs[from] = tb
	sh.last = tb
	return tb
}

func (tb *pairTable) state(s *slot) State {
	st := State{Due: s.due, Top: uint64(s.top)}
	if s.flags&flagHold != 0 {
		h := tb.holds[s.key]
		st.Hold, st.Fails = h.hold, h.fails
	}
	return st
}

// set stores st in s. Called with the shard's mu held.
func (tb *pairTable) set(s *slot, st State) {
	s.due, s.top = st.Due, uint32(st.Top)
	if st.Fails == 0 && st.Hold == 0 {
		if s.flags&flagHold != 0 {
			delete(tb.holds, s.key)
			s.flags &^= flagHold
		}
		return
	}
	if tb.holds == nil {
		tb.holds = make(map[uint64]holdInfo)
	}
	tb.holds[s.key] = holdInfo{hold: st.Hold, fails: st.Fails}
	s.flags |= flagHold
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

// horizon is the instant expiry is judged at: the earlier of the latest
// instant asked in the shard and the clock. Called with sh.mu held.
func (m *MemoryStore) horizon(sh *memShard) int64 {
	return min(sh.now, m.clock.Now().UnixNano())
}

// rebuild rehashes tb without its expired states, sized so that need
// states fill 64 % of it. Called with sh.mu held.
func (m *MemoryStore) rebuild(sh *memShard, tb *pairTable, need int) {
	now := m.horizon(sh)
	old := tb.slots
	live := 0
	for i := range old {
		s := &old[i]
		if s.key == 0 {
			continue
		}
		if tb.state(s).Expired(now, failMemory) {
			if s.flags&flagHold != 0 {
				delete(tb.holds, s.key)
			}
			s.key = 0
			continue
		}
		live++
	}
	need += live - tb.live
	n := max(need*targetDen/targetNum+1, minSlots)
	tb.slots = make([]slot, n)
	tb.live, tb.cursor = 0, 0
	tb.limit = n * loadNum / loadDen
	for i := range old {
		if s := old[i]; s.key != 0 {
			j, _ := tb.slotOf(s.key, m.hash(tb.from, s.key)<<shardBits)
			tb.slots[j] = s
			tb.live++
		}
	}
	if len(tb.holds) == 0 {
		tb.holds = nil
	}
}

// Incremental sweep: every sweepEvery calls to a table examine sweepSlots
// of its slots, and every crossEvery calls to a shard examine crossSlots
// slots of the next shards in turn, so that a full pass over n slots takes
// about n calls whatever their pattern, shards no call reaches included,
// and expired states never outnumber live ones for long.
const (
	sweepEvery = 16
	sweepSlots = 16
	crossEvery = 32
	crossSlots = 64
)

// step counts a call to tb and sweeps as described above. Called with
// sh.mu held, after the call is done with its slot.
func (m *MemoryStore) step(sh *memShard, tb *pairTable) {
	if tb.ops++; tb.ops >= sweepEvery {
		tb.ops = 0
		m.sweep(sh, tb, sweepSlots)
	}
	if sh.ops++; sh.ops >= crossEvery {
		sh.ops = 0
		m.cross(sh)
	}
}

// cross sweeps the tables of the next shards in turn, skipping shards whose
// lock is taken. Called with sh.mu held: TryLock never waits, so shards
// never deadlock.
func (m *MemoryStore) cross(sh *memShard) {
	for {
		cur := m.now.Load()
		if cur >= sh.now || m.now.CompareAndSwap(cur, sh.now) {
			break
		}
	}
	budget := crossSlots
	for tries := 0; budget > 0 && tries < 8; tries++ {
		o := &m.shards[m.rot.Add(1)%memShards]
		if o == sh || !o.mu.TryLock() {
			continue
		}
		for _, tb := range o.tabs {
			if budget -= m.sweep(o, tb, min(budget, len(tb.slots))); budget <= 0 {
				break
			}
		}
		o.mu.Unlock()
	}
}

// sweep examines up to k slots from the cursor, deleting expired states,
// and returns how many it examined (at least 1). When the cursor wraps
// around it refreshes the clock, shrinks a table that is less than a
// quarter full and drops an empty one. Called with sh.mu held.
func (m *MemoryStore) sweep(sh *memShard, tb *pairTable, k int) int {
	now := min(max(sh.now, m.now.Load()), tb.clk)
	done := 0
	for ; done < k; done++ {
		if tb.cursor >= len(tb.slots) {
			tb.cursor = 0
			tb.clk = m.clock.Now().UnixNano()
			switch {
			case tb.live == 0:
				delete(sh.tabs, tb.from)
				if sh.last == tb {
					sh.last = nil
				}
			case len(tb.slots) > 2*minSlots && tb.live < tb.limit/4:
				m.rebuild(sh, tb, 0)
			}
			return done + 1
		}
		s := &tb.slots[tb.cursor]
		if s.key != 0 && tb.state(s).Expired(now, failMemory) {
			tb.delete(tb.cursor, m)
			continue // the hole may have been filled: look again
		}
		tb.cursor++
	}
	return max(done, 1)
}

// delete empties slot i and shifts back the slots of its cluster that may
// move (backward-shift deletion), so that no tombstone is left.
func (tb *pairTable) delete(i int, m *MemoryStore) {
	if tb.slots[i].flags&flagHold != 0 {
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

func (m *MemoryStore) nextID(sh *memShard) uint64 {
	sh.seq++
	if sh.seq == 0 {
		sh.seq = 1
	}
	return uint64(sh.seq)
}

// reserve is Reserve without the interface. It does not allocate, except
// when a table grows.
func (m *MemoryStore) reserve(p Pair, t int64, cost, maxWait time.Duration) (Ticket, bool) {
	sh, hb := m.lock(p, t)
	tb, s := m.get(sh, p, hb)
	old := State{Due: s.due, Top: uint64(s.top)}
	if old.Next(t) > addSat(t, int64(maxWait)) {
		m.step(sh, tb)
		sh.mu.Unlock()
		return Ticket{Act: old.Next(t)}, false
	}
	st, tk := old.Reserve(t, cost, m.nextID(sh))
	s.due, s.top = st.Due, uint32(st.Top)
	m.step(sh, tb)
	sh.mu.Unlock()
	return tk, true
}

func (m *MemoryStore) next(p Pair, t int64) int64 {
	sh, hb := m.lock(p, math.MinInt64)
	_, s := sh.find(p, hb)
	due := int64(math.MinInt64)
	if s != nil {
		due = s.due
	}
	sh.mu.Unlock()
	return State{Due: due}.Next(t)
}

func (m *MemoryStore) cancel(p Pair, t int64, tk Ticket) bool {
	sh, hb := m.lock(p, t)
	defer sh.mu.Unlock()
	tb, s := sh.find(p, hb)
	if s == nil || tk.ID > math.MaxUint32 {
		return false
	}
	st, ok := tb.state(s).Cancel(tk, t)
	if ok {
		tb.set(s, st)
	}
	m.step(sh, tb)
	return ok
}

func (m *MemoryStore) refuse(p Pair, t int64, holds []time.Duration) time.Duration {
	sh, hb := m.lock(p, t)
	defer sh.mu.Unlock()
	tb, s := m.get(sh, p, hb)
	st, hold := tb.state(s).Refuse(t, holds)
	tb.set(s, st)
	m.step(sh, tb)
	return hold
}

func (m *MemoryStore) accept(p Pair, t int64) {
	sh, hb := m.lock(p, t)
	defer sh.mu.Unlock()
	tb, s := sh.find(p, hb)
	if s != nil && s.flags&flagHold != 0 {
		tb.set(s, tb.state(s).Accept())
	}
	if tb != nil {
		m.step(sh, tb)
	}
}

// Len returns the number of pairs the store holds state for, expired ones
// not yet dropped included.
func (m *MemoryStore) Len() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for _, tb := range sh.tabs {
			n += tb.live
		}
		sh.mu.Unlock()
	}
	return n
}

// Reserve implements [Store]; it never fails.
func (m *MemoryStore) Reserve(_ context.Context, p Pair, t time.Time, cost, maxWait time.Duration) (Ticket, bool, error) {
	tk, ok := m.reserve(p, t.UnixNano(), cost, maxWait)
	return tk, ok, nil
}

// Next implements [Store]; it never fails.
func (m *MemoryStore) Next(_ context.Context, p Pair, t time.Time) (time.Time, error) {
	return time.Unix(0, m.next(p, t.UnixNano())), nil
}

// Cancel implements [Store]; it never fails.
func (m *MemoryStore) Cancel(_ context.Context, p Pair, t time.Time, tk Ticket) (bool, error) {
	return m.cancel(p, t.UnixNano(), tk), nil
}

// Refuse implements [Store]; it never fails. The memory store keeps a
// pair's 131056 count for 15 minutes after its hold, whatever memory says.
func (m *MemoryStore) Refuse(_ context.Context, p Pair, t time.Time, holds []time.Duration, _ time.Duration) (time.Duration, error) {
	return m.refuse(p, t.UnixNano(), holds), nil
}

// Accept implements [Store]; it never fails.
func (m *MemoryStore) Accept(_ context.Context, p Pair, t time.Time) error {
	m.accept(p, t.UnixNano())
	return nil
}
