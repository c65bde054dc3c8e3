package outbox

import (
	"encoding/hex"
	"sync"
	"testing"
)

// Generated keys sort in the order they were made (so that they land at
// the end of the key index), from any number of goroutines, and are 32 hex
// digits, never repeated.
func TestOrderedKeysIncrease(t *testing.T) {
	const goroutines, each = 8, 2000
	got := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				got[g] = append(got[g], orderedKey())
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, keys := range got {
		for i, k := range keys {
			if _, err := hex.DecodeString(k); err != nil || len(k) != 32 {
				t.Fatalf("key %q: not 32 hex digits", k)
			}
			if i > 0 && k <= keys[i-1] {
				t.Fatalf("key %q made after %q sorts before it", k, keys[i-1])
			}
			if seen[k] {
				t.Fatalf("key %q made twice", k)
			}
			seen[k] = true
		}
	}
}
