package cloudapi

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The memory against a model of what it may and must remember: a list of
// claims in order. A key whose send is in flight (claimed, neither
// recorded nor released) is always remembered; a key remembered is in
// flight, or recorded less than age ago and not released; the last key
// claimed is remembered; a claim fails for a full memory exactly when max
// keys are in flight. The memory never holds more than max keys.
func TestIdemMemoryModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		max := rapid.IntRange(1, 5).Draw(t, "max")
		age := time.Duration(rapid.IntRange(1, 10).Draw(t, "age")) * time.Second
		im := newIdemMemory(max, age)
		type claim struct {
			key      string
			at       time.Time
			recorded bool
			gone     bool
		}
		var model []*claim
		now := time.Unix(0, 0)
		keys := []string{"a", "b", "c", "d", "e", "f"}
		latest := func(k string) *claim {
			for i := len(model) - 1; i >= 0; i-- {
				if model[i].key == k {
					return model[i]
				}
			}
			return nil
		}
		inFlight := func(c *claim) bool { return c != nil && !c.gone && !c.recorded }
		mayRemember := func(c *claim) bool {
			return c != nil && !c.gone && (!c.recorded || now.Sub(c.at) < age)
		}
		flying := func() int {
			n := 0
			for _, k := range keys {
				if inFlight(latest(k)) {
					n++
				}
			}
			return n
		}
		for range rapid.IntRange(1, 80).Draw(t, "ops") {
			k := rapid.SampledFrom(keys).Draw(t, "key")
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); op {
			case 0: // claim
				c := latest(k)
				wantFull := !inFlight(c) && flying() >= max
				_, _, _, ok, full := im.claim(now, []string{k}, nil)
				switch {
				case inFlight(c) && (ok || full):
					t.Fatalf("claim(%s) in flight: ok %v, full %v", k, ok, full)
				case ok && !full && mayRemember(c):
					// forgotten under the bound: allowed only for a recorded key
					if !c.recorded {
						t.Fatalf("claim(%s) of a key in flight succeeded", k)
					}
				case !ok && !full && !mayRemember(c):
					t.Fatalf("claim(%s) refused as a duplicate, model says forgotten", k)
				case full != wantFull:
					t.Fatalf("claim(%s): full %v, want %v (%d in flight, max %d)", k, full, wantFull, flying(), max)
				}
				if ok {
					model = append(model, &claim{key: k, at: now})
					if _, _, _, again, _ := im.claim(now, []string{k}, nil); again {
						t.Fatalf("claim(%s) just claimed succeeds again", k)
					}
				}
			case 1, 2: // end the latest claim of k, if in flight: record or release
				if c := latest(k); inFlight(c) {
					if op == 1 {
						im.record(now, k, sent{state: StateAccepted})
						c.recorded, c.at = true, now
					} else {
						im.release(k)
						c.gone = true
					}
				}
			case 3:
				now = now.Add(time.Duration(rapid.IntRange(0, 4).Draw(t, "dt")) * time.Second)
			}
			if len(im.m) > max || im.n > max {
				t.Fatalf("%d keys, %d claims, bound %d", len(im.m), im.n, max)
			}
			if im.inFlight != flying() {
				t.Fatalf("%d keys in flight, model %d", im.inFlight, flying())
			}
		}
	})
}
