package cloudapi

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The memory against a model: a list of live claims in order. A key is
// remembered iff it is among the last max claims, not released, and
// claimed less than age ago (or still in progress). The memory never holds
// more than max keys.
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
		remembered := func(k string) bool {
			live := 0
			for i := len(model) - 1; i >= 0; i-- {
				c := model[i]
				live++
				if c.key != k {
					continue
				}
				if c.gone || live > max {
					return false
				}
				return !c.recorded || now.Sub(c.at) < age
			}
			return false
		}
		for range rapid.IntRange(1, 60).Draw(t, "ops") {
			k := rapid.SampledFrom(keys).Draw(t, "key")
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); op {
			case 0: // claim
				want := !remembered(k)
				_, _, _, ok := im.claim(now, []string{k}, nil)
				if ok != want {
					t.Fatalf("claim(%s) = %v, model %v", k, ok, want)
				}
				if ok {
					model = append(model, &claim{key: k, at: now})
				}
			case 1, 2: // end the latest claim of k, if in progress: record or release
				for i := len(model) - 1; i >= 0; i-- {
					if model[i].key != k {
						continue
					}
					if c := model[i]; !c.gone && !c.recorded && remembered(k) {
						if op == 1 {
							im.record(now, k, sent{state: StateAccepted})
							c.recorded, c.at = true, now
						} else {
							im.release(k)
							c.gone = true
						}
					}
					break
				}
			case 3:
				now = now.Add(time.Duration(rapid.IntRange(0, 4).Draw(t, "dt")) * time.Second)
			}
			if len(im.m) > max || im.n > max {
				t.Fatalf("%d keys, %d claims, bound %d", len(im.m), im.n, max)
			}
		}
	})
}
