package webhook

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
)

// Deduper remembers the most recent keys it has seen, within a number of
// keys and a number of bytes, forgetting the oldest first. A key costs its
// length plus [DeduperKeyOverhead] bytes. It is safe for concurrent use.
//
// A [Handler] records a delivery's keys only once its callbacks took it:
// while they run, the keys are in flight, neither seen nor new (a
// concurrent redelivery of them is answered 503, so that Meta delivers
// again), and if the callbacks fail or panic the keys are dropped. The
// zero Deduper keeps NewHandler's default bounds (100,000 keys, 16 MiB).
type Deduper struct {
	mu       sync.Mutex // protects the fields below
	maxKeys  int
	maxBytes int
	bytes    int
	order    *list.List               // of string, oldest first
	seen     map[string]*list.Element // key -> its element in order
	flying   map[string]bool          // keys of deliveries in progress
}

// Default bounds of the zero Deduper and of a Handler without WithDeduper.
const (
	defaultDedupeKeys  = 100_000
	defaultDedupeBytes = 16 << 20
)

// DeduperKeyOverhead is the bytes a Deduper counts for each key beyond its
// length: an estimate of its map entry and list element.
const DeduperKeyOverhead = 96

// NewDeduper returns a Deduper that keeps at most maxKeys keys (at least 1)
// and at most maxBytes bytes of them (at least one key's worth).
func NewDeduper(maxKeys, maxBytes int) *Deduper {
	return &Deduper{maxKeys: max(maxKeys, 1), maxBytes: max(maxBytes, 0), order: list.New(),
		seen: map[string]*list.Element{}, flying: map[string]bool{}}
}

// init gives the zero Deduper its default bounds. Called with d.mu held.
func (d *Deduper) init() {
	if d.order == nil {
		if d.maxKeys == 0 && d.maxBytes == 0 {
			d.maxKeys, d.maxBytes = defaultDedupeKeys, defaultDedupeBytes
		}
		d.maxKeys = max(d.maxKeys, 1)
		d.order, d.seen, d.flying = list.New(), map[string]*list.Element{}, map[string]bool{}
	}
}

// Seen records key and reports whether it had been recorded before. A key
// a Handler is delivering counts as recorded (Seen reports true and
// records nothing).
func (d *Deduper) Seen(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	if _, ok := d.seen[key]; ok || d.flying[key] {
		return true
	}
	d.record(key)
	return false
}

// record adds key, forgetting the oldest keys beyond the bounds. Called
// with d.mu held.
func (d *Deduper) record(key string) {
	if _, ok := d.seen[key]; ok {
		return
	}
	d.seen[key] = d.order.PushBack(key)
	d.bytes += len(key) + DeduperKeyOverhead
	for d.order.Len() > 1 && (d.order.Len() > d.maxKeys || d.bytes > d.maxBytes) {
		d.remove(d.order.Front())
	}
}

// Forget removes key, so that it is new again. A delivery in progress
// records its keys when it succeeds, whatever Forget did meanwhile.
func (d *Deduper) Forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	if e, ok := d.seen[key]; ok {
		d.remove(e)
	}
}

// claimState is what claim found for a key.
type claimState int

const (
	claimNew    claimState = iota // not seen: now in flight, claimed by the caller
	claimSeen                     // recorded: a duplicate
	claimFlying                   // in flight in another delivery
)

// claim marks key in flight unless it is recorded or already in flight.
func (d *Deduper) claim(key string) claimState {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	if _, ok := d.seen[key]; ok {
		return claimSeen
	}
	if d.flying[key] {
		return claimFlying
	}
	d.flying[key] = true
	return claimNew
}

// commit records the claimed keys of a delivery the callbacks took.
func (d *Deduper) commit(keys []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	for _, k := range keys {
		delete(d.flying, k)
		d.record(k)
	}
}

// release drops the claimed keys of a delivery that failed: they are new
// again.
func (d *Deduper) release(keys []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	for _, k := range keys {
		delete(d.flying, k)
	}
}

// Called with d.mu held.
func (d *Deduper) remove(e *list.Element) {
	k := e.Value.(string)
	d.order.Remove(e)
	delete(d.seen, k)
	d.bytes -= len(k) + DeduperKeyOverhead
}

// Len returns the number of keys remembered.
func (d *Deduper) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	return len(d.seen)
}

// Bytes returns the bytes the remembered keys count for.
func (d *Deduper) Bytes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	return d.bytes
}

// messageKey and statusKey name an item by its ID and a hash of its content
// (sum): Meta's redelivery repeats both, while a repeat of an ID with other
// content is not a duplicate.
func messageKey(m *Message, sum string) string { return "m:" + m.ID + ":" + sum }
func statusKey(s *Status, sum string) string {
	return "s:" + s.ID + ":" + s.Status + ":" + s.Type + ":" + sum
}

// itemSums returns a content hash for each of n typed items decoded from
// the array member of the messages value raw: the hash of the item's bytes
// as sent (the decoder keeps every object element, in order). When the raw
// array cannot be matched to the items, it hashes each item's canonical
// encoding instead (typed fields in order, Extra keys sorted), which costs
// more.
func itemSums[T json.Marshaler](raw []byte, member string, items []T) []string {
	sums := make([]string, len(items))
	if len(items) == 0 {
		return sums
	}
	var elems [][]byte
	if ms, ok := splitObject(raw); ok {
		found := 0
		for _, m := range ms {
			if string(m.key) == member {
				found++
				all, _ := splitArray(m.value)
				elems = elems[:0]
				for _, e := range all {
					if e = bytes.TrimSpace(e); len(e) > 0 && e[0] == '{' {
						elems = append(elems, e)
					}
				}
			}
		}
		if found != 1 {
			elems = nil
		}
	}
	for i, it := range items {
		b := []byte(nil)
		if len(elems) == len(items) {
			b = elems[i]
		} else if enc, err := it.MarshalJSON(); err == nil {
			b = enc
		}
		sum := sha256.Sum256(b)
		sums[i] = hex.EncodeToString(sum[:12])
	}
	return sums
}

// changeKey identifies a change of a field other than messages by its
// content, so that Meta's redelivery of a template or quality update is
// dropped too.
func changeKey(waba string, c *Change) string {
	h := sha256.New()
	h.Write([]byte(waba))
	h.Write([]byte{0})
	h.Write([]byte(c.Field))
	h.Write([]byte{0})
	h.Write(c.Raw)
	return "c:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// filter claims the items of n that are new and removes the others: those
// recorded before, those another delivery has in flight (busy reports
// whether there were any), and repeats within n. It returns the keys it
// claimed, for commit once the callbacks took n or release otherwise. A
// messages change keeps its Raw value as sent; its typed Value loses the
// removed items. A change left with nothing new is removed, and so is an
// entry left without changes.
func (d *Deduper) filter(n *Notification) (keys []string, busy bool) {
	keys, busy = d.mark(n)
	entries := n.Entry[:0]
	for _, e := range n.Entry {
		had := len(e.Changes)
		changes := e.Changes[:0]
		for _, c := range e.Changes {
			if c.Field != "" || len(c.Raw) != 0 || len(c.Problems) != 0 || len(c.Extra) != 0 {
				changes = append(changes, c)
			}
		}
		e.Changes = changes
		if had == 0 || len(changes) > 0 {
			entries = append(entries, e)
		}
	}
	n.Entry = entries
	return keys, busy
}

// mark claims the items of n, clearing the changes whose items were all
// removed.
func (d *Deduper) mark(n *Notification) (keys []string, busy bool) {
	mine := map[string]bool{}
	// keep claims key for this delivery and reports whether its item is
	// delivered now.
	keep := func(key string) bool {
		if mine[key] {
			return false // repeated within n: delivered once
		}
		switch d.claim(key) {
		case claimNew:
			mine[key] = true
			keys = append(keys, key)
			return true
		case claimFlying:
			busy = true
		}
		return false
	}
	for i := range n.Entry {
		e := &n.Entry[i]
		for j := range e.Changes {
			c := &e.Changes[j]
			if c.Field != FieldMessages || c.Value == nil {
				if len(c.Problems) > 0 {
					continue // delivered again: the application may want to see it
				}
				if !keep(changeKey(e.ID, c)) {
					*c = Change{}
				}
				continue
			}
			v := c.Value
			before := len(v.Messages) + len(v.Statuses)
			msums := itemSums(c.Raw, "messages", v.Messages)
			ssums := itemSums(c.Raw, "statuses", v.Statuses)
			msgs := v.Messages[:0]
			for k := range v.Messages {
				m := &v.Messages[k]
				if m.ID == "" || keep(messageKey(m, msums[k])) {
					msgs = append(msgs, *m)
				}
			}
			v.Messages = msgs
			sts := v.Statuses[:0]
			for k := range v.Statuses {
				s := &v.Statuses[k]
				if s.ID == "" || keep(statusKey(s, ssums[k])) {
					sts = append(sts, *s)
				}
			}
			v.Statuses = sts
			if before > 0 && len(msgs)+len(sts) == 0 && len(v.Errors) == 0 && len(c.Problems) == 0 {
				*c = Change{}
			}
		}
	}
	return keys, busy
}
