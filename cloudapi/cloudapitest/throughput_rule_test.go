package cloudapitest

import (
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestThroughputRuleMatchesItsDefinition: the throughput rule's answer
// for instants that come out of order (by less than a second, as arrival
// stamps do) is its definition, checked the slow way: a message is
// accepted if and only if, with it, no closed one-second window holds
// more than the figure.
func TestThroughputRuleMatchesItsDefinition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(1, 6).Draw(t, "limit")
		s := NewServer(nil, WithThroughput(limit))
		base := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
		var accepted []time.Time
		latest := base
		for i := range rapid.IntRange(1, 60).Draw(t, "n") {
			// Mostly forward, sometimes up to 999 ms before the latest.
			step := time.Duration(rapid.IntRange(-999, 400).Draw(t, "step")) * time.Millisecond
			if rapid.Bool().Draw(t, "same") {
				step = 0
			}
			at := latest.Add(step)
			if at.After(latest) {
				latest = at
			}
			s.mu.Lock()
			got := s.throughputOK("1", at)
			if got {
				req := Request{PhoneNumberID: "1", To: "2376" + strconv.Itoa(i)}
				s.accept(&req, at)
			}
			s.mu.Unlock()
			want := true
			// Every window that holds at starts within [at-1s, at]; the
			// most it holds is reached where a window starts at one of its
			// ends, or at an accepted instant, or ends at one.
			starts := []time.Time{at.Add(-time.Second), at}
			for _, a := range accepted {
				if !a.Before(at.Add(-time.Second)) && !a.After(at) {
					starts = append(starts, a)
				}
				if !a.Before(at) && !a.After(at.Add(time.Second)) {
					starts = append(starts, a.Add(-time.Second))
				}
			}
			for _, a := range starts {
				n := 1 // the message itself
				for _, b := range accepted {
					if !b.Before(a) && !b.After(a.Add(time.Second)) {
						n++
					}
				}
				if n > limit {
					want = false
				}
			}
			if got != want {
				t.Fatalf("message %d at %v (accepted before: %v): throughputOK %v, want %v", i, at.Sub(base), offsets(base, accepted), got, want)
			}
			if got {
				accepted = append(accepted, at)
			}
		}
	})
}

func offsets(base time.Time, ts []time.Time) []time.Duration {
	var d []time.Duration
	for _, t := range ts {
		d = append(d, t.Sub(base))
	}
	return d
}
