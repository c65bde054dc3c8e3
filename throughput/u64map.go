package throughput

import (
	"math/bits"
	"math/rand/v2"
)

// u64map maps non-zero uint64 keys to int64 values in one open-addressing
// table of 16-byte slots (linear probing, backward-shift deletion, a seeded
// hash), holding no pointers: a Tier's million recipients cost one probe
// per lookup and nothing to the garbage collector. It grows at 80 % full
// and shrinks below 20 %. Not safe for concurrent use.
type u64map struct {
	slots []u64slot
	live  int
	seed  uint64
}

type u64slot struct {
	key uint64 // 0: empty
	val int64
}

func (m *u64map) home(key uint64, n int) int {
	x := key ^ m.seed
	x ^= x >> 29
	hi, _ := bits.Mul64(x*0x9E3779B97F4A7C15, uint64(n))
	return int(hi)
}

// find returns the index of key, or of the empty slot where it belongs,
// and whether it is there.
func (m *u64map) find(key uint64) (int, bool) {
	n := len(m.slots)
	if n == 0 {
		return -1, false
	}
	i := m.home(key, n)
	for {
		s := &m.slots[i]
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

func (m *u64map) get(key uint64) (int64, bool) {
	i, ok := m.find(key)
	if !ok {
		return 0, false
	}
	return m.slots[i].val, true
}

func (m *u64map) set(key uint64, val int64) {
	i, ok := m.find(key)
	if ok {
		m.slots[i].val = val
		return
	}
	if (m.live+1)*5 > len(m.slots)*4 {
		m.resize(max(2*len(m.slots), 16))
		i, _ = m.find(key)
	}
	m.slots[i] = u64slot{key, val}
	m.live++
}

func (m *u64map) del(key uint64) {
	i, ok := m.find(key)
	if !ok {
		return
	}
	n := len(m.slots)
	j := i
	for {
		if j++; j == n {
			j = 0
		}
		s := m.slots[j]
		if s.key == 0 {
			break
		}
		// s may move to i when i lies on its probe path, from home to j.
		if h := m.home(s.key, n); (j-h+n)%n >= (j-i+n)%n {
			m.slots[i] = s
			i = j
		}
	}
	m.slots[i] = u64slot{}
	m.live--
	if n > 64 && m.live*5 < n {
		m.resize(n / 2)
	}
}

func (m *u64map) resize(n int) {
	if m.seed == 0 {
		m.seed = rand.Uint64() | 1
	}
	old := m.slots
	m.slots = make([]u64slot, n)
	for _, s := range old {
		if s.key != 0 {
			i, _ := m.find(s.key)
			m.slots[i] = s
		}
	}
}
