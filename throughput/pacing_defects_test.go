package throughput_test

import (
	"testing"
	"time"

	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// pacingScenario is one run of the write-time check's model
// (writecheck_model_test.go) with every figure given.
type pacingScenario struct {
	name           string
	mps            int
	procs          int // Limiters sharing a store (1: one Limiter alone)
	senders        int
	jitter         time.Duration
	lateEvery      int
	lateBy         time.Duration
	writeLateEvery int
	stalls         [][2]time.Duration // from, length, after t0
}

func (sc pacingScenario) run() (*senderModel, []time.Time) {
	m := &senderModel{lims: []*throughput.Limiter{throughput.New(sc.mps)}}
	if sc.procs > 1 {
		store := throughputstore.NewMemoryStore(nil)
		m.lims = nil
		for range sc.procs {
			m.lims = append(m.lims, throughput.New(sc.mps, throughput.WithStore(store, "n")))
		}
	}
	for _, s := range sc.stalls {
		m.stalls = append(m.stalls, [2]time.Time{t0.Add(s[0]), t0.Add(s[0] + s[1])})
	}
	k := 0
	m.wake = func() time.Duration {
		k++
		d := time.Duration(0)
		if sc.jitter > 0 {
			d = time.Duration(k*7919) % sc.jitter
		}
		if sc.lateEvery > 0 && k%sc.lateEvery == 0 {
			d += sc.lateBy
		}
		return d
	}
	w := 0
	m.write = func() time.Duration {
		w++
		if sc.writeLateEvery > 0 && w%sc.writeLateEvery == 0 {
			return 40 * time.Millisecond
		}
		return time.Duration(w*104729) % (50 * time.Microsecond)
	}
	n := int(1.5 * float64(sc.mps))
	return m, m.simulate(t0, sc.senders, n)
}

// TestLateWriteShiftsTheSendsAfterIt reproduces the 81 arrivals in a
// closed second at 80 msg/s the write-time check's model found (wave 3,
// session 5): a process stalls between a send's check and its write, so
// that the write of the slot at t0 lands 12.69 ms late, past the next
// slot (T = 12.66 ms), and the 80 slots after it arrive on time. The
// pause of the excess over the margin (wrote + 6.36 ms) held no slot, so
// the window from the late arrival held it and the 80 after it. A write
// later than the margin covers must shift the sends after it.
func TestLateWriteShiftsTheSendsAfterIt(t *testing.T) {
	t.Parallel()
	for _, sc := range []pacingScenario{
		{name: "three processes", mps: throughput.Default, procs: 3, senders: 3, stalls: [][2]time.Duration{{1, 12691208}}},
		{name: "one Limiter", mps: throughput.Default, procs: 1, senders: 3, stalls: [][2]time.Duration{{1, 12691208}}},
		{name: "one Limiter, many senders", mps: throughput.Default, procs: 1, senders: 64, stalls: [][2]time.Duration{{1, 12691208}}},
		{name: "1,000 msg/s", mps: throughput.Upgraded, procs: 3, senders: 8, stalls: [][2]time.Duration{{1, 7 * time.Millisecond}}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			m, arrivals := sc.run()
			if got, limit := maxInWindow(arrivals, time.Second), m.lims[0].PerSecond(); got > limit {
				t.Fatalf("%d arrivals in a closed second, limit %d", got, limit)
			}
		})
	}
}

// TestSharedLimiterAllLateStillSends reproduces the livelock the model
// found (wave 3, session 5, seed 11581089921743940961): three Limiters
// share a store at 10,000 msg/s, one sender uses the first, wakes up to 5
// ms late (one wake in three 300 ms late) and writes every send 40 ms
// after its check. Its share of the slots is at most 1 %, so no margin
// within 250 ms covered a tolerance beyond 2.5 ms; the tolerance that
// cost least was half an interval (50 µs), every check was later, and the
// sender sent nothing for hours. It must send its 15,000 messages.
func TestSharedLimiterAllLateStillSends(t *testing.T) {
	t.Parallel()
	sc := pacingScenario{mps: 10_000, procs: 3, senders: 1, jitter: 5 * time.Millisecond, lateEvery: 3, lateBy: 300 * time.Millisecond, writeLateEvery: 1,
		stalls: [][2]time.Duration{{7, 1000158}}}
	m, arrivals := sc.run() // the model panics after 50 checks a message
	if got, limit := maxInWindow(arrivals, time.Second), m.lims[0].PerSecond(); got > limit {
		t.Fatalf("%d arrivals in a closed second, limit %d", got, limit)
	}
	if m.checks > 5*len(arrivals) {
		t.Fatalf("%d checks for %d arrivals: the sender gave most slots back", m.checks, len(arrivals))
	}
}
