// Package simclock is a discrete-event simulation clock for wapace's
// examples and end-to-end benchmarks: a clock.Clock whose time stands still
// while any goroutine it runs is working, and jumps to the next wake-up as
// soon as all of them are waiting. A campaign of 100,000 messages that would
// take minutes of real time runs in a second or two, with every instant
// exact.
//
// Only goroutines started with Go (or Run) are tracked, and they must block
// only in the clock's sleeps or briefly (on mutexes); a tracked goroutine
// that waits on another one through a channel would stop the simulation.
// Waits go through SleepContext, which wapace's packages use when the clock
// offers it (internal/clockwait); clock.Clock's Timer, After and Ticker come
// from an embedded clock.Mock that the simulation does not drive.
package simclock

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// Clock is a simulation clock. Use New.
type Clock struct {
	*clock.Mock // only to complete clock.Clock; not driven

	mu      sync.Mutex // protects the fields below
	now     time.Time
	active  int // tracked goroutines not waiting
	waiters waitHeap
	seq     uint64
	done    sync.WaitGroup
}

// New returns a Clock standing at start.
func New(start time.Time) *Clock {
	c := &Clock{Mock: clock.NewMock(), now: start}
	return c
}

// Now returns the simulated time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since returns the simulated time elapsed since t.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Until returns the simulated time until t.
func (c *Clock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// Run runs f as a tracked goroutine and returns when f and every goroutine
// started with Go have returned.
func (c *Clock) Run(f func()) {
	c.Go(f)
	c.done.Wait()
}

// Go starts f as a tracked goroutine.
func (c *Clock) Go(f func()) {
	c.mu.Lock()
	c.active++
	c.done.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.done.Done()
		defer c.exit()
		f()
	}()
}

func (c *Clock) exit() {
	c.mu.Lock()
	c.active--
	c.advanceLocked()
	c.mu.Unlock()
}

// SleepContext waits d of simulated time, or until ctx is done. A context
// cancelled while every tracked goroutine waits cannot stop the jump to the
// next wake-up: the simulation does not see cancellation coming.
func (c *Clock) SleepContext(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil || d <= 0 {
		return err
	}
	c.mu.Lock()
	c.seq++
	w := &waiter{at: c.now.Add(d), seq: c.seq, ch: make(chan struct{})}
	heap.Push(&c.waiters, w)
	c.active--
	c.advanceLocked()
	c.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		if w.index >= 0 { // not woken yet: leave the queue and run again
			heap.Remove(&c.waiters, w.index)
			c.active++
			return ctx.Err()
		}
		return nil // woken at the same moment: the wait is over
	}
}

// Sleep waits d of simulated time.
func (c *Clock) Sleep(d time.Duration) { _ = c.SleepContext(context.Background(), d) }

// advanceLocked jumps to the next wake-up when every tracked goroutine is
// waiting, and wakes all waiters due then. Called with c.mu held.
func (c *Clock) advanceLocked() {
	if c.active > 0 || c.waiters.Len() == 0 {
		return
	}
	at := c.waiters[0].at
	if at.After(c.now) {
		c.now = at
	}
	for c.waiters.Len() > 0 && !c.waiters[0].at.After(c.now) {
		w := heap.Pop(&c.waiters).(*waiter)
		c.active++
		close(w.ch)
	}
}

type waiter struct {
	at    time.Time
	seq   uint64
	ch    chan struct{}
	index int // in the heap; -1 once popped
}

type waitHeap []*waiter

func (h waitHeap) Len() int { return len(h) }
func (h waitHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waitHeap) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waitHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	w.index = -1
	*h = old[:len(old)-1]
	return w
}
