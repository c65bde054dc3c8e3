package throughput

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wapace/wapace/internal/instant"
	"github.com/wapace/wapace/internal/sat"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// ErrStore is matched (with errors.Is) by the error of every decision a
// [throughputstore.Store] could not make. A Reservation that is not OK because of it, or a
// Claim that is not OK because of it, means nothing was reserved: do not
// send. The error also unwraps to the store's own error and names the
// decision that failed ("throughput: store claim: ...").
var ErrStore = errors.New("throughput: store unavailable")

// storeError wraps the error a Store returned. It matches ErrStore and
// unwraps to the store's own error.
type storeError struct {
	// Op is the decision: "reserve", "cancel", "hold", "claim", "release"
	// or "count".
	Op  string
	Err error
}

// Error returns "throughput: store <op>: <err>".
func (e *storeError) Error() string { return "throughput: store " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the store's error.
func (e *storeError) Unwrap() error { return e.Err }

// Is reports whether target is ErrStore.
func (e *storeError) Is(target error) bool { return target == ErrStore }

// WithStore keeps the state of a Limiter, Budget or Tier in s under key
// (the phone number ID for a Limiter, a name of the app and WABA for a
// Budget, of the business portfolio for a Tier), so that every one using
// the same s and key acts as one. Counts of consecutive refusals, and the
// adaptive rate after 130429, stay local to each Limiter and Budget; the
// holds they apply are shared. A nil s keeps the state in memory; a store
// with an empty key is invalid ([ErrInvalidOption]).
//
// The instants kept in s are the wall clock's, the one clock processes
// share, so they must agree on it (NTP). A step of the wall clock while
// they run moves every instant asked after it against those kept: a step
// back holds the number for the step (four Clients on one store, stepped
// back 2 s, kept their number 61 % busy over the next few seconds, not
// 99 %). Without a Store a Limiter keeps its instants on the monotonic
// clock, which a step does not move.
func WithStore(s throughputstore.Store, key string) Option {
	return func(o *options) {
		if s != nil && key == "" {
			o.invalid("WithStore: an empty key")
			return
		}
		o.store, o.key = s, key
	}
}

// memBucket is the in-memory bucket state behind a Limiter or Budget with
// no Store: one lock orders and decides every call.
type memBucket struct {
	// sc turns instants into the nanoseconds below and back: the
	// monotonic clock's for a Limiter on the real clock without a Store,
	// the wall clock's otherwise (internal/instant). Set before the
	// bucket is shared.
	sc instant.Scale

	mu       sync.Mutex // protects the fields below
	s        throughputstore.BucketState
	seq      uint64
	interval time.Duration // the figures of the owner's local decisions
	burst    int

	// held is s.Hold, readable without the lock (hold): a sender reads
	// it before every write (cloudapi's write-time check). Only extend
	// moves s.Hold, and it stores held before it unlocks.
	held atomic.Int64

	// The moves of reservations already handed out (SetMPSAt): a
	// reservation made when gen was g has moved by moves[g-base:]. Both
	// are written under mu; gen and moved are readable without it.
	moves []move
	base  uint64                        // the gen of moves[0] (older moves were dropped)
	gen   atomic.Uint64                 // moves made so far
	moved atomic.Pointer[chan struct{}] // closed at the next move (or cut), then replaced

	// cuts counts the cuts of a Store-backed Limiter's figure (SetMPSAt
	// to a lower one): a Store cannot move the tickets it handed out, so
	// a reservation made before a cut is stale, and its holder reserves
	// again at the new figure (see Reservation.stale). moved is closed
	// at each cut too.
	cuts atomic.Uint64
}

// move is one change of figure that moved the reservations waiting at at
// (their instant later than at), as TAT moved: TAT became ref + (TAT -
// ref) x ratio. A reservation's instant act is that of the token it took,
// the burst's slack (burst - 1 intervals) before the TAT that token set in
// a queue: so act moves as that TAT does, less the new slack. With the
// burst b and interval I before and b' and I' after, act becomes ref +
// (act - ref) x ratio + shift, shift = (b - b') x I'. The instants of a
// queue are then those a bucket at the new figure would have given it.
type move struct {
	at, ref int64
	ratio   float64
	shift   int64
}

// maxMoves bounds the moves a bucket remembers: a reservation still
// waiting after this many changes of figure keeps the instant the older
// ones gave it (SetMPSAt is called on upgrades, a few times a year).
const maxMoves = 64

// tat returns a TAT (or a ticket's PrevTAT) moved by m.
func (m move) tat(v int64) int64 {
	if v <= m.ref {
		return v
	}
	return sat.Add(m.ref, int64(min(float64(v-m.ref)*m.ratio, 0x1p62)))
}

// act returns a reservation's instant moved by m: unchanged if it was due
// by m.at (it went), else never before m.ref.
func (m move) act(v int64) int64 {
	if v <= m.at {
		return v
	}
	return max(sat.Add(m.tat(v), m.shift), m.ref)
}

// movedTicket returns tk, reserved when the bucket's gen was gen, with the
// moves made since applied to its instants.
func (b *memBucket) movedTicket(tk throughputstore.BucketTicket, gen uint64) throughputstore.BucketTicket {
	if b == nil || b.gen.Load() == gen {
		return tk
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.movedLocked(tk, gen)
}

func (b *memBucket) movedLocked(tk throughputstore.BucketTicket, gen uint64) throughputstore.BucketTicket {
	for i := max(gen, b.base); i < b.base+uint64(len(b.moves)); i++ {
		m := b.moves[i-b.base]
		tk.PrevTAT, tk.Act = m.tat(tk.PrevTAT), m.act(tk.Act)
	}
	return tk
}

// nextMove returns a channel closed at the bucket's next move.
func (b *memBucket) nextMove() <-chan struct{} {
	if ch := b.moved.Load(); ch != nil {
		return *ch
	}
	return nil
}

// moveLocked moves the bucket and every reservation waiting at t (its
// instant later than t) from the figures b.interval and b.burst to
// interval and burst (see move): TAT from ref = t for a shorter interval,
// and for a longer one from the earlier of t and the instant the bucket
// was last empty (as setParams stretches). Called with b.mu held, before
// the figures change.
func (b *memBucket) moveLocked(t int64, interval time.Duration, burst int) {
	if b.interval == 0 || interval == b.interval {
		return
	}
	ref := t
	if interval > b.interval {
		ref = min(t, sat.Add(b.s.TAT, -int64(b.burst)*int64(b.interval)))
	}
	m := move{at: t, ref: ref, ratio: float64(interval) / float64(b.interval), shift: int64(b.burst-burst) * int64(interval)}
	b.s.TAT = m.tat(b.s.TAT)
	if len(b.moves) == maxMoves {
		b.moves = b.moves[1:]
		b.base++
	}
	b.moves = append(b.moves, m)
	b.gen.Add(1)
	next := make(chan struct{})
	if old := b.moved.Swap(&next); old != nil {
		close(*old)
	}
	b.interval = interval // setParams then changes nothing more
	if b.s.Interval != 0 {
		b.s.Interval = int64(interval)
	}
}

// cut marks every reservation made so far stale and wakes the holders
// waiting on moved (see cuts).
func (b *memBucket) cut() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cuts.Add(1)
	next := make(chan struct{})
	if old := b.moved.Swap(&next); old != nil {
		close(*old)
	}
}

// setParams sets the figures of local decisions at t, never leaving the
// bucket more tokens than it holds.
//
// A shorter interval (a higher rate) keeps TAT: reservations already made
// keep their slots at the old rate, and new ones come after them (moving
// TAT earlier would schedule new sends among the old ones, both rates at
// once). A longer interval stretches the debt ahead of TAT from the
// earlier of t and the instant the bucket was last empty (TAT - burst x
// interval), so that an instant asked out of order, in the past or the
// future, never hands out tokens the old figures had spent.
//
// With move (SetMPSAt), the reservations waiting at t move with TAT
// instead, both ways (see moveLocked and Reservation.moved).
func (b *memBucket) setParams(t int64, interval time.Duration, burst int, move bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.moved.Load() == nil {
		ch := make(chan struct{})
		b.moved.Store(&ch)
	}
	if move {
		b.moveLocked(t, interval, burst)
	}
	if b.interval != 0 && interval > b.interval {
		ref := min(t, sat.Add(b.s.TAT, -int64(b.burst)*int64(b.interval)))
		if b.s.TAT > ref {
			b.s.TAT = ref + int64(float64(b.s.TAT-ref)*float64(interval)/float64(b.interval))
		}
	}
	b.interval, b.burst = interval, burst
	if b.s.Interval != 0 {
		b.s.Interval = int64(interval) // the debt is restated: Reserve must not stretch it again
	}
}

// reserveLocal is reserve with the bucket's own figures. It reports
// ErrBurstTooLarge for n above the burst.
// It also returns the bucket's gen, for the moves to come.
func (b *memBucket) reserveLocal(t int64, n int, maxWait time.Duration) (throughputstore.BucketTicket, uint64, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.burst {
		return throughputstore.BucketTicket{}, 0, false, ErrBurstTooLarge
	}
	tk, ok := b.reserveLocked(t, n, b.interval, b.burst, maxWait)
	return tk, b.gen.Load(), ok, nil
}

func (b *memBucket) reserveLocked(t int64, n int, interval time.Duration, burst int, maxWait time.Duration) (throughputstore.BucketTicket, bool) {
	if n > burst || n < 1 {
		return throughputstore.BucketTicket{}, false
	}
	if next := b.s.Next(t, n, interval, burst); next > sat.Add(t, int64(maxWait)) {
		return throughputstore.BucketTicket{Act: next}, false
	}
	b.seq++
	var tk throughputstore.BucketTicket
	b.s, tk = b.s.Reserve(t, n, interval, burst, b.seq)
	return tk, true
}

func (b *memBucket) cancel(t int64, tk throughputstore.BucketTicket, gen uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	tk = b.movedLocked(tk, gen)
	var ok bool
	b.s, ok = b.s.Cancel(tk, t)
	return ok
}

func (b *memBucket) extend(until int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s = b.s.Extend(until)
	b.held.Store(b.s.Hold)
	return b.s.Hold
}

func (b *memBucket) hold() int64 { return b.held.Load() }

// shift moves the bucket's next free instant to max(TAT, t) + d
// (see Limiter.shift), as a reservation never given back: a reservation
// made before it can no longer be cancelled (it is no longer the last).
func (b *memBucket) shift(t int64, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	b.s.TAT = sat.Add(max(b.s.TAT, t), int64(d))
	b.s.Top = b.seq
}
