package pairlimit

import "time"

// Policy is a pair rate rule: one message every Interval to the same
// recipient, with bursts of up to Burst messages, all sent within
// BurstWindow of the burst's first, accepted against future quota.
//
// A zero or negative field stands for Meta's value, so the zero Policy is
// [Meta].
type Policy struct {
	// Interval is the steady spacing, and the debt each message of a burst
	// adds: after a burst of n, the pair is silent until n x Interval after
	// the burst began.
	Interval time.Duration
	// Burst is the most messages one burst may hold.
	Burst int
	// BurstWindow is how long after its first message a burst accepts more.
	BurstWindow time.Duration
}

// Meta is Meta's documented pair rate limit: "Business phone numbers can
// send 1 message every 6 seconds to the same WhatsApp user", and "You may
// send up to 45 messages in a 6-second burst, but this borrows from your
// future quota" (a burst of 20 requires a ~2-minute wait).
var Meta = Policy{Interval: 6 * time.Second, Burst: 45, BurstWindow: 6 * time.Second}

// withDefaults replaces unset fields with Meta's.
func (p Policy) withDefaults() Policy {
	if p.Interval <= 0 {
		p.Interval = Meta.Interval
	}
	if p.Burst <= 0 {
		p.Burst = Meta.Burst
	}
	if p.BurstWindow <= 0 {
		p.BurstWindow = Meta.BurstWindow
	}
	return p
}
