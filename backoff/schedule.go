package backoff

import (
	"math"
	"math/rand/v2"
	"time"
)

// Schedule gives the wait before each retry. Delay(0) is the wait before the
// first retry, Delay(1) before the second, and so on. Implementations must be
// safe for concurrent use; the schedules of this package are pure unless
// jitter is switched on.
type Schedule interface {
	Delay(retry int) time.Duration
}

// Jitter says how much randomness an [Exponential] schedule adds to a delay d.
type Jitter int

const (
	// NoJitter uses d exactly.
	NoJitter Jitter = iota
	// FullJitter draws uniformly from [0, d).
	FullJitter
	// EqualJitter draws uniformly from [d/2, d).
	EqualJitter
)

// Exponential is the schedule Initial x Factor^retry, capped at Max, with
// optional jitter. Its fields are read on every call and must not change
// while the schedule is in use.
//
// The zero value doubles from 1 s with no cap and no jitter: 1 s, 2 s,
// 4 s, ... (the schedule most HTTP clients and job queues use, usually
// capped: Exponential{Max: time.Minute}; compare [Meta]). A constant wait
// d is Exponential{Initial: d, Factor: 1}.
type Exponential struct {
	// Initial is the first delay. Zero or negative means 1 s.
	Initial time.Duration
	// Factor multiplies the delay after each retry. Values below 1 (the zero
	// value included) mean 2.
	Factor float64
	// Max caps every delay. Zero or negative means no cap beyond the largest
	// time.Duration: a delay never overflows, even at retry 1000.
	Max time.Duration
	// Jitter randomises each delay; the cap applies before jitter.
	Jitter Jitter
	// Rand is the random source for jitter. Nil uses math/rand/v2's global
	// source. A shared schedule with a non-nil Rand needs a source that is
	// safe for concurrent use; tests pass a seeded source for determinism.
	Rand rand.Source
}

// Meta is the schedule Meta prescribes after a pair rate limit (131056):
// retry after 4^X seconds, X starting at 0 and rising by one after each
// failure: 1 s, 4 s, 16 s, 64 s, 256 s.
//
// Meta states no cap; this schedule caps at 256 s (the Max field). The fifth wait, 256 s, brings the
// cumulative wait to 341 s, more than the longest debt a pair can owe (a full
// burst of 45 x 6 s = 270 s), so a longer wait can only delay a message that
// would already be accepted. Uncapped, the sixth wait would be 1024 s, which
// is what one real project saw for a single message. No jitter: Meta's text
// is exact, and the pair limit is per pair, so there is no herd to spread.
var Meta = Exponential{Initial: time.Second, Factor: 4, Max: 256 * time.Second}

// Delay returns the wait before retry number retry (0 for the first retry).
// A negative retry counts as 0.
func (e Exponential) Delay(retry int) time.Duration {
	d := e.base(retry)
	switch e.Jitter {
	case FullJitter:
		return time.Duration(e.float() * float64(d))
	case EqualJitter:
		half := d / 2
		return half + time.Duration(e.float()*float64(d-half))
	default:
		return d
	}
}

// base is the delay before jitter.
func (e Exponential) base(retry int) time.Duration {
	initial := e.Initial
	if initial <= 0 {
		initial = time.Second
	}
	factor := e.Factor
	if factor < 1 || math.IsNaN(factor) {
		factor = 2
	}
	limit := time.Duration(math.MaxInt64)
	if e.Max > 0 {
		limit = e.Max
	}
	if retry < 0 {
		retry = 0
	}
	// Exact integer arithmetic while it fits (4^X x 1 s is exact), float
	// above; both saturate at limit.
	d := float64(initial) * math.Pow(factor, float64(retry))
	if math.IsInf(d, 0) || math.IsNaN(d) || d >= float64(limit) {
		return limit
	}
	return time.Duration(d)
}

func (e Exponential) float() float64 {
	if e.Rand != nil {
		return float64(e.Rand.Uint64()>>11) / (1 << 53)
	}
	return rand.Float64()
}
