package webhook

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// Deduper remembers the most recent keys it has seen, within a number of
// keys and a number of bytes, forgetting the oldest first. A key costs its
// length plus [DeduperKeyOverhead] bytes. It is safe for concurrent use.
type Deduper struct {
	mu       sync.Mutex // protects the fields below
	maxKeys  int
	maxBytes int
	bytes    int
	order    *list.List               // of string, oldest first
	seen     map[string]*list.Element // key -> its element in order
}

// DeduperKeyOverhead is the bytes a Deduper counts for each key beyond its
// length: an estimate of its map entry and list element.
const DeduperKeyOverhead = 96

// NewDeduper returns a Deduper that keeps at most maxKeys keys (at least 1)
// and at most maxBytes bytes of them (at least one key's worth).
func NewDeduper(maxKeys, maxBytes int) *Deduper {
	return &Deduper{maxKeys: max(maxKeys, 1), maxBytes: max(maxBytes, 0), order: list.New(), seen: map[string]*list.Element{}}
}

// Seen records key and reports whether it had been recorded before.
func (d *Deduper) Seen(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.seen[key]; ok {
		return true
	}
	d.seen[key] = d.order.PushBack(key)
	d.bytes += len(key) + DeduperKeyOverhead
	for d.order.Len() > 1 && (d.order.Len() > d.maxKeys || d.bytes > d.maxBytes) {
		d.remove(d.order.Front())
	}
	return false
}

// Forget removes key, so that it is new again.
func (d *Deduper) Forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.seen[key]; ok {
		d.remove(e)
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
	return len(d.seen)
}

// Bytes returns the bytes the remembered keys count for.
func (d *Deduper) Bytes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bytes
}

func messageKey(m *Message) string { return "m:" + m.ID }
func statusKey(s *Status) string   { return "s:" + s.ID + ":" + s.Status + ":" + s.Type }

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

// filter removes the items of n seen before and returns the keys it
// recorded, for Forget if the callbacks fail. A messages change keeps its
// Raw value as sent; its typed Value loses the duplicates. A change left
// with nothing new is removed, and so is an entry left without changes.
func (d *Deduper) filter(n *Notification) []string {
	keys := d.mark(n)
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
	return keys
}

// mark records the items of n, clearing the changes whose items were all
// seen before.
func (d *Deduper) mark(n *Notification) []string {
	var keys []string
	for i := range n.Entry {
		e := &n.Entry[i]
		for j := range e.Changes {
			c := &e.Changes[j]
			if c.Field != FieldMessages || c.Value == nil {
				if len(c.Problems) > 0 {
					continue // delivered again: the application may want to see it
				}
				k := changeKey(e.ID, c)
				if d.Seen(k) {
					*c = Change{}
				} else {
					keys = append(keys, k)
				}
				continue
			}
			v := c.Value
			before := len(v.Messages) + len(v.Statuses)
			msgs := v.Messages[:0]
			for k := range v.Messages {
				m := &v.Messages[k]
				if m.ID == "" {
					msgs = append(msgs, *m)
					continue
				}
				key := messageKey(m)
				if !d.Seen(key) {
					keys = append(keys, key)
					msgs = append(msgs, *m)
				}
			}
			v.Messages = msgs
			sts := v.Statuses[:0]
			for k := range v.Statuses {
				s := &v.Statuses[k]
				if s.ID == "" {
					sts = append(sts, *s)
					continue
				}
				key := statusKey(s)
				if !d.Seen(key) {
					keys = append(keys, key)
					sts = append(sts, *s)
				}
			}
			v.Statuses = sts
			if before > 0 && len(msgs)+len(sts) == 0 && len(v.Errors) == 0 && len(c.Problems) == 0 {
				*c = Change{}
			}
		}
	}
	return keys
}
