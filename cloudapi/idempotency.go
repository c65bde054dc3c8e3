package cloudapi

import (
	"crypto/sha256"
	"strconv"
	"sync"
	"time"

	"github.com/wapace/wapace/internal/instant"
)

// Defaults of the idempotency memory (WithIdempotencyMemory).
const (
	defaultIdempotencyKeys = 100_000
	defaultIdempotencyAge  = 24 * time.Hour
)

// sent is what the memory holds for one key: the first send's outcome.
type sent struct {
	state    SendState
	result   *Result
	err      error
	attempts int
	at       int64 // on the memory's scale (sc), for the age bound
}

// idemMemory remembers the keys a Client sent, bounded in entries and age:
// at most max keys (each at most 512 bytes, Validate's limit, plus about
// 200 bytes of outcome), none older than age. Keys are forgotten oldest
// first, save for keys whose send is in flight, which are never forgotten
// (a retry of one would be sent a second time): when the memory is full,
// an oldest claim in flight moves to the newest end of the ring and the
// next oldest goes; when every key is in flight, a claim fails
// (ErrIdempotencyMemoryFull) and claims nothing. The zero value is not
// usable; see newIdemMemory.
type idemMemory struct {
	max int
	age time.Duration
	sc  instant.Scale // the Client clock's: a step of the wall clock ages no key

	mu       sync.Mutex           // protects the fields below
	m        map[string]idemEntry // by key
	order    []ringItem           // claims, oldest first from head (a FIFO ring)
	head     int                  // index of the oldest claim in order
	n        int                  // claims in order
	seq      uint64               // numbers claims
	inFlight int                  // keys in m whose send is in progress (rec == nil)
}

type idemEntry struct {
	rec   *sent // nil while the send is in progress
	seq   uint64
	print string // the message's fingerprint: a key names one message
}

type ringItem struct {
	key string
	seq uint64 // an item whose seq differs from its key's entry is stale
}

func newIdemMemory(max int, age time.Duration) *idemMemory {
	return &idemMemory{max: max, age: age, m: map[string]idemEntry{}, order: make([]ringItem, max)}
}

// pop removes the oldest claim, forgetting its key unless the key was
// claimed again since. The caller has checked that its send is not in
// flight. Called with im.mu held.
func (im *idemMemory) pop() {
	it := im.order[im.head]
	if e, ok := im.m[it.key]; ok && e.seq == it.seq {
		delete(im.m, it.key)
	}
	im.order[im.head] = ringItem{}
	im.head = (im.head + 1) % im.max
	im.n--
}

// inFlightAt reports whether the claim at ring index i is its key's
// current claim and the key's send is in progress. Called with im.mu held.
func (im *idemMemory) inFlightAt(i int) bool {
	it := im.order[i]
	e, ok := im.m[it.key]
	return ok && e.seq == it.seq && e.rec == nil
}

// claim marks keys as in progress at now, for the messages whose
// fingerprints are prints (nil: not checked). It returns ok == false,
// claiming nothing, when one of them is already remembered: then dup is
// its index and, if that key names another message, conflict is set;
// otherwise first is the key's record (nil while its send is in progress).
// It returns full, claiming nothing, when the memory cannot make room for
// keys without forgetting a key in flight.
func (im *idemMemory) claim(now time.Time, keys, prints []string) (dup int, first *sent, conflict, ok, full bool) {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.expire(im.sc.Nanos(now))
	printOf := func(i int) string {
		if prints == nil {
			return ""
		}
		return prints[i]
	}
	for i, k := range keys {
		if e, seen := im.m[k]; seen {
			if e.rec == nil || im.sc.Nanos(now)-e.rec.at < int64(im.age) {
				return i, e.rec, e.print != printOf(i), false, false
			}
			delete(im.m, k) // aged out behind an older send still in progress
		}
		for j, prev := range keys[:i] {
			if prev == k {
				return i, nil, printOf(j) != printOf(i), false, false
			}
		}
	}
	if im.inFlight+len(keys) > im.max {
		return 0, nil, false, false, true
	}
	for i, k := range keys {
		for im.n == im.max { // full: forget the oldest not in flight
			if !im.inFlightAt(im.head) {
				im.pop()
				break
			}
			// Keep it: with the ring full, the oldest becomes the newest.
			im.head = (im.head + 1) % im.max
		}
		im.seq++
		im.order[(im.head+im.n)%im.max] = ringItem{key: k, seq: im.seq}
		im.n++
		im.m[k] = idemEntry{seq: im.seq, print: printOf(i)}
		im.inFlight++
	}
	return 0, nil, false, true, false
}

// record stores the outcome of key's send at now.
func (im *idemMemory) record(now time.Time, key string, s sent) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if e, ok := im.m[key]; ok {
		if e.rec == nil {
			im.inFlight--
		}
		s.at = im.sc.Nanos(now)
		e.rec = &s
		im.m[key] = e
	}
}

// release forgets key, whose message was not sent: it may be sent again.
// Its claim stays in the ring as a stale item, dropped in turn.
func (im *idemMemory) release(key string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if e, ok := im.m[key]; ok && e.rec == nil {
		im.inFlight--
	}
	delete(im.m, key)
}

// expire forgets the oldest keys while they are older than the age bound.
// Called with im.mu held.
func (im *idemMemory) expire(now int64) {
	for im.n > 0 {
		it := im.order[im.head]
		if e, ok := im.m[it.key]; ok && e.seq == it.seq && (e.rec == nil || now-e.rec.at < int64(im.age)) {
			return
		}
		im.pop()
	}
}

// fingerprint names the message whose request body is body, sent from
// the business number fromID, for the idempotency memory.
func fingerprint(fromID uint64, body []byte) string {
	h := sha256.New()
	h.Write(strconv.AppendUint(nil, fromID, 10))
	h.Write([]byte{0})
	h.Write(body)
	return string(h.Sum(nil)[:16])
}

// conflict is the error of a send whose key names another message: a
// permanent refusal, nothing sent.
func conflict(key string) error {
	return &SendError{State: StateFailed, IdempotencyKey: key, Err: &IdempotencyConflictError{IdempotencyKey: key}}
}

// duplicate returns the error (and, for an accepted first send, the
// result) of a send whose key was already sent.
func duplicate(key string, first *sent) (*Result, error) {
	if first == nil {
		return nil, &SendError{State: StateSubmittedUnknown, IdempotencyKey: key, Duplicate: true, Err: ErrInProgress}
	}
	return first.result, &SendError{State: first.state, IdempotencyKey: key, Attempts: first.attempts, Duplicate: true, Err: first.err}
}

// Forget makes the Client forget idempotency key, so that a message sent
// with it may be sent again: for a queue that reconciled an unknown outcome
// as not delivered and decided to resend. A send still in progress with
// the key is unaffected. Forget is safe for concurrent use.
func (c *Client) Forget(key string) {
	if c != nil && c.idem != nil {
		c.idem.release(key)
	}
}
