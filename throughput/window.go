package throughput

import (
	"sync"
	"time"

	"github.com/wapace/wapace/internal/instant"
	"github.com/wapace/wapace/internal/sat"
	"github.com/wapace/wapace/internal/slotmoves"
	"github.com/wapace/wapace/internal/writewindow"
)

// The window of writes. Meta counts a number's messages when they arrive,
// in every second; the bucket decides when a send may leave, and a send
// that leaves late lands next to the ones after it. The margin and the
// tolerance (pace.go) bound that by stretching every second for the
// lateness a sender observes: under load, with checks 15 to 25 ms late,
// a number at 1,000 msg/s then ran at 95 % of its figure before any other
// loss, and each send later than the tolerance gave its slot back unused.
//
// A sender that lets every write of a number through the Limiter at the
// last moment, and reports when its bytes went out, needs neither: the
// Limiter counts the writes themselves, and lets a write go only while
// the writes of the last second and windowJitter, with those let go and
// not yet reported, are fewer than PerSecond(). A send that wakes late
// then goes at once when the second has room (it does unless sends
// bunched), keeping its slot; the bucket paces at its full rate, with no
// margin. Why that holds every second at Meta within the figure: take a
// second at Meta, and the write let go last among those arriving in it,
// asked at c. Every other of them was let go before it, and is either not
// yet reported at c (counted) or reported as written at some w; it
// arrived at most windowJitter plus a second before the last one, which
// left at c or later, so w >= c - 1 s - windowJitter (counted too). So at
// c the window held every other, fewer than PerSecond() in all.
//
// A stall of the sender makes the sends due in it go together, late;
// about a second later the window is full, and the sends then due wait
// until that bunch leaves it. Were they all told that instant they would
// go together in turn, a bunch back every second (for over a minute at
// 80 msg/s, the bucket leaving 1 % of the figure free to absorb it), each
// 5 ms from a 130429 at Meta if its arrivals spread more. So the window
// tells the writes it refuses instants a second's share apart, from when
// its room comes: they go spaced, as the bucket would have spaced them.
//
// What the window cannot see is the time from the bytes being out to
// Meta's count: windowJitter is allowed for its spread (half an interval
// is, without the window: see pace.go). The instants are the
// sender's own: a write reported later than it was is counted longer
// (safe), and one is never counted before it was let go.
//
// The window is sound only when every write of the number goes through
// it, so only cloudapi's Clients, whose write-time check lets every write
// through and reports it, turn it on (internal/writewindow); a Limiter
// with a Store has none (other processes write too). It sits beside the
// bucket: holds, pauses and SetMPSAt apply to the bucket as before, and
// the window's limit follows PerSecond().

// windowJitter is the spread the window allows between two writes' times
// to Meta's count (see above): 5 ms, the least tolerance. It costs no
// rate: a queue at the bucket's pace puts at most 99 % of the figure
// into a second (the burst is 1 %, see split), so a span 1 % longer than
// a second still holds fewer writes than the figure; only sends that
// bunched after a stall meet the window.
const windowJitter = 5 * time.Millisecond

// window is a Limiter's window of writes.
type window struct {
	sc      instant.Scale // the Limiter's (memBucket.sc): the monotonic clock's on the real clock
	mu      sync.Mutex
	limit   int     // PerSecond(): the writes any span may hold
	pending int     // let go, neither reported written nor dropped
	at      []int64 // ring of written instants, ascending from head
	head, n int
	last    int64 // the latest instant in at
	now     int64 // the latest instant decided or pruned at
	room    int64 // the instant after the last one told to a refused write (see let)
}

// windowSpan is the span of writes the window keeps within its limit.
const windowSpan = time.Second + windowJitter

// setLimit sets the writes a span may hold. The ring keeps every instant
// it holds (after a cut it may hold more than the new limit, until they
// leave): an instant dropped early would let a raise that follows put
// more than the figure into a second.
func (w *window) setLimit(limit int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.limit = limit
	w.resize(max(limit, w.n))
}

// resize gives the ring room for size instants, keeping those it holds
// (size >= w.n). Called with w.mu held.
func (w *window) resize(size int) {
	if len(w.at) == size {
		return
	}
	at := make([]int64, size)
	for i := range w.n {
		at[i] = w.at[(w.head+i)%len(w.at)]
	}
	w.at, w.head = at, 0
}

// prune drops the instants before t - windowSpan, t at least the latest
// instant pruned at, which it returns: a caller that read the time before
// another took the lock, and asks at an earlier instant, is decided at
// the other's (its write comes after both), so that an instant pruned
// for the other is one it need not count either. Called with w.mu held.
func (w *window) prune(t int64) int64 {
	t = max(t, w.now)
	w.now = t
	from := sat.Add(t, -int64(windowSpan))
	for w.n > 0 && w.at[w.head] < from {
		w.head = (w.head + 1) % len(w.at)
		w.n--
	}
	return t
}

// let lets a write asked at t go if the window has room, or returns how
// long from t until the instant it is told to ask again at: when enough
// instants have left the window for it, and a second's share after the
// instant told to the write refused before it. The writes that bunched
// after a stall leave the window together, and waiters all told that
// instant would go together in turn, a bunch back every second. (The
// instants told hold no place: a write that asks in between may take the
// room, and the waiter is told a later instant.) With every one of the
// limit let go and not reported, no instant is known: it returns a
// second's share, to ask again then.
func (w *window) let(t int64) (*windowTicket, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.prune(t)
	held := w.pending + w.n
	if held < w.limit {
		w.pending++
		return &windowTicket{w: w, from: c}, 0
	}
	spacing := max(time.Second/time.Duration(max(w.limit, 1)), time.Microsecond)
	k := held - w.limit + 1 // instants that must leave first
	if k > w.n {
		return nil, spacing
	}
	room := max(sat.Add(w.at[(w.head+k-1)%len(w.at)], int64(windowSpan)+1), w.room)
	w.room = sat.Add(room, int64(spacing))
	return nil, time.Duration(max(room-t, 1))
}

// wrote records a write let go at from as written at t (from at least),
// counted from the latest instant in the window, and the latest decided
// at, at least: a reported instant that arrives after a later one is
// counted longer, which is safe.
func (w *window) wrote(from, t int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending--
	t = w.prune(max(t, from, w.last))
	w.last = t
	if w.n == len(w.at) {
		// A write was let go only while fewer than limit were held, so
		// the ring is full only after a cut (setLimit) let it hold more
		// than the limit: it grows rather than forget an instant.
		w.resize(max(2*len(w.at), 1))
	}
	w.at[(w.head+w.n)%len(w.at)] = t
	w.n++
}

// drop forgets a write let go that never happened.
func (w *window) drop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending--
}

// windowTicket is a write let through the window (writewindow.Ticket).
type windowTicket struct {
	w    *window
	from int64
	once sync.Once
}

// Wrote records the write at t: see writewindow.Ticket.
func (k *windowTicket) Wrote(t time.Time) {
	k.once.Do(func() { k.w.wrote(k.from, k.w.sc.Nanos(t)) })
}

// Drop forgets the write: see writewindow.Ticket.
func (k *windowTicket) Drop() { k.once.Do(k.w.drop) }

// withWriteWindow gives a Limiter (New, without a Store) a window of
// writes: see the notes above. Not exported: internal/writewindow.
func withWriteWindow() Option {
	return func(o *options) {
		o.windowed = true
		o.only = append(o.only, only{"window of writes", "New"})
	}
}

// letWrite is writewindow.Let: the window's decision for a write asked at
// t; no Ticket and no wait for a Limiter without a window.
func letWrite(l *Limiter, t time.Time) (writewindow.Ticket, time.Duration) {
	l.init()
	if l.win == nil {
		return nil, 0
	}
	k, wait := l.win.let(l.b.sc.Nanos(t))
	if k == nil {
		return nil, wait
	}
	return k, 0
}

// hasWindow is writewindow.On.
func hasWindow(l *Limiter) bool {
	l.init()
	return l.win != nil
}

func init() {
	slotmoves.Stale = Reservation.stale
	writewindow.Option = withWriteWindow
	writewindow.Let = letWrite
	writewindow.On = hasWindow
}
