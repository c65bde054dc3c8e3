package pairlimit

import (
	"math"
	"slices"
	"time"
)

// Verdict is what the pair rule says of one send in a log.
type Verdict struct {
	// At is the send's instant.
	At time.Time
	// Accepted reports whether Meta's rule accepts the send. A refused send
	// is what Meta answers with error 131056.
	Accepted bool
	// Debt is how long the pair still owed at that instant: the time until
	// the debt of earlier sends was repaid (zero if it was).
	Debt time.Duration
	// BurstStart and BurstLen describe the burst this send joined or began
	// when accepted, or, when refused, the burst that spent the quota (the
	// cause: the refused send is its victim).
	BurstStart time.Time
	BurstLen   int
}

// modelState is one pair's state in Meta's model, in nanoseconds.
type modelState struct {
	due        int64 // when the debt is repaid
	burstStart int64
	burstLen   int
}

// accept applies Meta's rule to one send at t. A refused send changes
// nothing.
func (p Policy) accept(s modelState, t int64) (modelState, bool) {
	switch {
	case t >= s.due:
		return modelState{due: t + int64(p.Interval), burstStart: t, burstLen: 1}, true
	case t < s.burstStart+int64(p.BurstWindow) && s.burstLen < p.Burst:
		s.burstLen++
		s.due += int64(p.Interval)
		return s, true
	default:
		return s, false
	}
}

// Replay runs one pair's log of send instants through the pair rule p
// (fields left zero stand for Meta's) and returns a verdict per send, in
// the order of sends. Sends are judged in time order, so the log need not
// be sorted; sends at the same instant keep their order. Refused sends
// change nothing, as at Meta.
//
// Replay is the forensic tool for a 131056: the failing message is usually
// the victim, and its verdict names the burst that spent the quota.
func Replay(p Policy, sends []time.Time) []Verdict {
	p = p.withDefaults()
	order := make([]int, len(sends))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return sends[a].Compare(sends[b]) })
	out := make([]Verdict, len(sends))
	s := modelState{due: math.MinInt64, burstStart: math.MinInt64}
	for _, i := range order {
		t := sends[i].UnixNano()
		v := Verdict{At: sends[i]}
		if s.due > t {
			v.Debt = time.Duration(s.due - t)
		}
		next, ok := p.accept(s, t)
		v.Accepted = ok
		if ok {
			s = next
		}
		v.BurstStart, v.BurstLen = time.Unix(0, s.burstStart).In(sends[i].Location()), s.burstLen
		out[i] = v
	}
	return out
}
