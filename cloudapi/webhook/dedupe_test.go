package webhook_test

import (
	"slices"
	"testing"

	"github.com/wapace/wapace/cloudapi/webhook"
	"pgregory.net/rapid"
)

// dedupeModel is the Deduper's specification: keys in the order first
// seen, the oldest dropped while more than maxKeys or maxBytes are held
// (but never the last one).
type dedupeModel struct {
	maxKeys, maxBytes int
	keys              []string
}

func (m *dedupeModel) bytes() int {
	n := 0
	for _, k := range m.keys {
		n += len(k) + webhook.DeduperKeyOverhead
	}
	return n
}

func (m *dedupeModel) seen(k string) bool {
	if slices.Contains(m.keys, k) {
		return true
	}
	m.keys = append(m.keys, k)
	for len(m.keys) > 1 && (len(m.keys) > m.maxKeys || m.bytes() > m.maxBytes) {
		m.keys = m.keys[1:]
	}
	return false
}

func (m *dedupeModel) forget(k string) {
	if i := slices.Index(m.keys, k); i >= 0 {
		m.keys = slices.Delete(m.keys, i, i+1)
	}
}

// TestDeduperModel: any sequence of Seen and Forget gives the answers, the
// length and the byte count of the model.
func TestDeduperModel(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		maxKeys := rapid.IntRange(1, 20).Draw(t, "maxKeys")
		maxBytes := rapid.IntRange(0, 2000).Draw(t, "maxBytes")
		d := webhook.NewDeduper(maxKeys, maxBytes)
		m := &dedupeModel{maxKeys: maxKeys, maxBytes: maxBytes}
		key := rapid.StringMatching(`[a-e]{1,40}`)
		for range rapid.IntRange(1, 200).Draw(t, "steps") {
			k := key.Draw(t, "key")
			if rapid.IntRange(0, 4).Draw(t, "op") == 0 {
				d.Forget(k)
				m.forget(k)
			} else if got, want := d.Seen(k), m.seen(k); got != want {
				t.Fatalf("Seen(%q) = %v, model %v (model keys %v)", k, got, want, m.keys)
			}
			if d.Len() != len(m.keys) || d.Bytes() != m.bytes() {
				t.Fatalf("Len %d Bytes %d, model %d %d", d.Len(), d.Bytes(), len(m.keys), m.bytes())
			}
		}
	})
}
