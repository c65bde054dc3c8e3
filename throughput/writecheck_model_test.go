package throughput_test

import (
	"container/heap"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/throughputstore"
	"pgregory.net/rapid"
)

// senderModel is a model of cloudapi's sender around one Limiter (or a
// few sharing a store, one per process), written from the write-time
// check's contract (see throughput's notes on write-time pacing), not
// from its code: senders goroutines each reserve a slot, wake at it (late
// by the scheduler's jitter, or by a stall of the whole process), check
// (a check later than Tolerance gives the slot back and reserves again;
// one met by a hold waits it out and reserves after it), and write (late
// by a little, or by a stall after the check), which is observed; then
// the next message. The writes are the arrivals.
type senderModel struct {
	lims   []*throughput.Limiter // sender i uses lims[i % len(lims)]
	events eventQueue
	stalls [][2]time.Time // the process runs nothing within [from, to)
	wake   func() time.Duration
	write  func() time.Duration

	arrivals []time.Time
	checks   int // checks made
	late     int // checks later than the tolerance
}

type simEvent struct {
	at      time.Time
	sender  int
	slot    time.Time
	r       throughput.Reservation
	checked time.Time // zero: the event is the check; else the write
}

type eventQueue []simEvent

func (q eventQueue) Len() int           { return len(q) }
func (q eventQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q eventQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)        { *q = append(*q, x.(simEvent)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// run moves an instant out of any stall: nothing runs during one.
func (m *senderModel) run(t time.Time) time.Time {
	for _, s := range m.stalls {
		if !t.Before(s[0]) && t.Before(s[1]) {
			t = s[1]
		}
	}
	return t
}

// reserve takes a slot asked at t and schedules the sender's check.
func (m *senderModel) reserve(sender int, t time.Time) {
	r := m.lims[sender%len(m.lims)].ReserveN(t, 1)
	slot := r.TimeToAct()
	heap.Push(&m.events, simEvent{at: m.run(slot.Add(m.wake())), sender: sender, slot: slot, r: r})
}

// simulate sends n messages and returns the arrivals, sorted.
func (m *senderModel) simulate(start time.Time, senders, n int) []time.Time {
	for i := range senders {
		m.reserve(i, start.Add(time.Duration(i)*time.Microsecond))
	}
	begun := senders
	for m.events.Len() > 0 {
		e := heap.Pop(&m.events).(simEvent)
		lim := m.lims[e.sender%len(m.lims)]
		if !e.checked.IsZero() { // the write
			lim.ObserveSend(e.slot, e.checked, e.at)
			m.arrivals = append(m.arrivals, e.at)
			if begun < n {
				begun++
				m.reserve(e.sender, e.at)
			}
			continue
		}
		m.checks++
		if m.checks > 50*n {
			panic(fmt.Sprintf("the model sends nothing: every check is late (tolerance %v, margin %v, at %v, %d arrivals)", lim.Tolerance(), lim.Margin(), e.at.Sub(start), len(m.arrivals)))
		}
		now := e.at
		if h := lim.HeldUntil(); h.After(now) {
			e.r.CancelAt(e.slot)
			m.reserve(e.sender, m.run(h))
			continue
		}
		if now.Sub(e.slot) > lim.Tolerance() {
			m.late++
			lim.ObserveSend(e.slot, now, time.Time{})
			e.r.CancelAt(e.slot)
			m.reserve(e.sender, now)
			continue
		}
		heap.Push(&m.events, simEvent{at: m.run(now.Add(m.write())), sender: e.sender, slot: e.slot, checked: now})
	}
	slices.SortFunc(m.arrivals, time.Time.Compare)
	return m.arrivals
}

// TestWriteCheckKeepsEverySecond: whatever the lateness of the senders
// (jitter up to 5 ms, one check in 3 to 50 late by up to 300 ms, stalls of the
// whole process, writes late after the check), the arrivals the write-time
// check lets through hold at most PerSecond() in every closed second, at
// 80, 1,000 and 10,000 msg/s with 1 to 64 senders, through one Limiter or
// two or three sharing a store.
func TestWriteCheckKeepsEverySecond(t *testing.T) { checkEverySecond(t, false) }

// TestWriteCheckKeepsEverySecondWithHeadroom: the same with one Limiter
// built WithHeadroom (0 or 10 %). Its tolerance was half an interval (50
// µs at 10,000 msg/s): with the senders' jitter nearly every check was
// late, and the model sent nothing.
func TestWriteCheckKeepsEverySecondWithHeadroom(t *testing.T) { checkEverySecond(t, true) }

func checkEverySecond(t *testing.T, headroom bool) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		mps := rapid.SampledFrom([]int{throughput.Default, throughput.Upgraded, 10_000}).Draw(t, "mps")
		senders := rapid.IntRange(1, 64).Draw(t, "senders")
		jitter := rapid.SampledFrom([]time.Duration{0, 100 * time.Microsecond, time.Millisecond, 5 * time.Millisecond}).Draw(t, "jitter")
		lateEvery := rapid.SampledFrom([]int{0, 3, 7, 20, 50}).Draw(t, "lateEvery") // one wake in lateEvery is late (0: none)
		lateBy := rapid.SampledFrom([]time.Duration{3 * time.Millisecond, 20 * time.Millisecond, 300 * time.Millisecond}).Draw(t, "lateBy")
		writeLateEvery := rapid.IntRange(0, 200).Draw(t, "writeLateEvery")
		seconds := 1.5
		n := int(seconds * float64(mps))
		// One Limiter, or one per process sharing a store (the
		// senders spread over them).
		m := &senderModel{lims: []*throughput.Limiter{throughput.New(mps)}}
		if headroom { // one Limiter, its figures fixed: they follow no lateness
			f := rapid.SampledFrom([]float64{0, 0.1}).Draw(t, "headroom")
			m.lims = []*throughput.Limiter{throughput.New(mps, throughput.WithHeadroom(f))}
		} else if procs := rapid.IntRange(1, 3).Draw(t, "processes"); procs > 1 {
			store := throughputstore.NewMemoryStore(nil)
			m.lims = nil
			for range procs {
				m.lims = append(m.lims, throughput.New(mps, throughput.WithStore(store, "n")))
			}
		}
		for range rapid.IntRange(0, 5).Draw(t, "stalls") {
			from := t0.Add(time.Duration(rapid.Int64Range(0, int64(2*time.Second)).Draw(t, "stallFrom")))
			d := time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(100*time.Millisecond)).Draw(t, "stallFor"))
			m.stalls = append(m.stalls, [2]time.Time{from, from.Add(d)})
		}
		k := 0
		m.wake = func() time.Duration {
			k++
			d := time.Duration(0)
			if jitter > 0 {
				d = time.Duration(k*7919) % jitter
			}
			if lateEvery > 0 && k%lateEvery == 0 {
				d += lateBy
			}
			return d
		}
		w := 0
		m.write = func() time.Duration {
			w++
			if writeLateEvery > 0 && w%writeLateEvery == 0 {
				return 40 * time.Millisecond
			}
			return time.Duration(w*104729) % (50 * time.Microsecond)
		}
		arrivals := m.simulate(t0, senders, n)
		if len(arrivals) != n {
			t.Fatalf("%d arrivals of %d", len(arrivals), n)
		}
		if got := maxInWindow(arrivals, time.Second); got > m.lims[0].PerSecond() {
			t.Fatalf("%d arrivals in a closed second, limit %d (%d Limiters; the first's tolerance %v, margin %v; %d of %d checks late)",
				got, m.lims[0].PerSecond(), len(m.lims), m.lims[0].Tolerance(), m.lims[0].Margin(), m.late, m.checks)
		}
	})
}
