// Package clocktest is a clock.Mock for wapace's tests that reports every
// timer it creates, so that a test advances time exactly when the code
// under test waits, never before (benbjohnson's Mock alone relies on a 1 ms
// real sleep to let goroutines reach their timers).
package clocktest

import (
	"time"

	"github.com/benbjohnson/clock"
)

// Clock is a clock.Mock that reports its timers to Run.
type Clock struct {
	*clock.Mock
	timers chan time.Duration
}

// New returns a Clock at the Mock's epoch.
func New() *Clock { return &Clock{Mock: clock.NewMock(), timers: make(chan time.Duration)} }

// Timer creates a mock timer and reports it.
func (c *Clock) Timer(d time.Duration) *clock.Timer {
	t := c.Mock.Timer(d)
	c.timers <- d
	return t
}

// Run runs f in a goroutine, advancing the clock by each timer's duration as
// soon as the timer exists, until f returns. It returns the durations waited,
// in order.
func (c *Clock) Run(f func()) []time.Duration {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	var waits []time.Duration
	for {
		select {
		case d := <-c.timers:
			waits = append(waits, d)
			c.Add(d)
		case <-done:
			return waits
		}
	}
}
