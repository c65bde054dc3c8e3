// Package simclock is a discrete-event simulation clock: a clock.Clock
// (github.com/benbjohnson/clock) whose time stands still while any
// goroutine it runs is working, and jumps to the next wake-up as soon as all
// of them are waiting. Give it to wapace's packages (cloudapi.WithClock,
// pairlimit.WithClock, throughput.WithClock, cloudapitest.WithClock) and a
// campaign of 100,000 messages that would take hours of real time runs in a
// second or two, with every instant exact.
//
// # Model
//
// Only goroutines started with [Clock.Go] (or [Clock.Run]) are tracked, and
// they must block only in the clock's sleeps ([Clock.SleepContext],
// [Clock.Sleep]) or briefly (on mutexes); a tracked goroutine that waits on
// another one through a channel, or on the network, stops the simulation
// until it runs again. wapace's packages wait through SleepContext whenever
// the clock offers it. The timers of clock.Clock (Timer, After, AfterFunc,
// Tick, Ticker, WithDeadline, WithTimeout) are not simulated: they come from
// a clock.Mock that never advances. Use testing/synctest instead when the
// code under test waits on timers or sockets.
package simclock

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// Clock is a simulation clock. Use New. It is safe for concurrent use by
// the goroutines it runs.
type Clock struct {
	mock *clock.Mock // only to complete clock.Clock; never advanced

	mu      sync.Mutex // protects the fields below
	now     time.Time
	active  int // tracked goroutines not waiting
	waiters waitHeap
	seq     uint64
	done    sync.WaitGroup
}

// New returns a Clock standing at start.
func New(start time.Time) *Clock {
	c := &Clock{mock: clock.NewMock(), now: start}
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

var _ clock.Clock = (*Clock)(nil)

// After is not simulated: see the package documentation.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.mock.After(d) }

// AfterFunc is not simulated: see the package documentation.
func (c *Clock) AfterFunc(d time.Duration, f func()) *clock.Timer { return c.mock.AfterFunc(d, f) }

// Tick is not simulated: see the package documentation.
func (c *Clock) Tick(d time.Duration) <-chan time.Time { return c.mock.Tick(d) }

// Ticker is not simulated: see the package documentation.
func (c *Clock) Ticker(d time.Duration) *clock.Ticker { return c.mock.Ticker(d) }

// Timer is not simulated: see the package documentation.
func (c *Clock) Timer(d time.Duration) *clock.Timer { return c.mock.Timer(d) }

// WithDeadline is not simulated: see the package documentation.
func (c *Clock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return c.mock.WithDeadline(parent, d)
}

// WithTimeout is not simulated: see the package documentation.
func (c *Clock) WithTimeout(parent context.Context, t time.Duration) (context.Context, context.CancelFunc) {
	return c.mock.WithTimeout(parent, t)
}

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
