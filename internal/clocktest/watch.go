package clocktest

import (
	"sync"
	"testing"
	"time"
)

// Watch watches the test's process on the real clock from now until the
// returned func is called (at the latest when the test ends). That func
// returns the longest the process went without running a goroutine that
// asks every 10 ms (a stall: the machine gave the process no CPU, which
// the load average inside a virtual machine may not show) and how far the
// wall clock moved against the monotonic one meanwhile (a step, as NTP
// makes). A wall-clock test logs them beside a failure, or lifts a bar
// that only holds on a machine that ran it.
func Watch(t testing.TB) func() (stall, step time.Duration) {
	start := time.Now()
	done, stopped := make(chan struct{}), make(chan struct{})
	var longest time.Duration
	go func() {
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				longest = max(longest, now.Sub(last))
				last = now
			}
		}
	}()
	var once sync.Once
	var stall, step time.Duration
	finish := func() (time.Duration, time.Duration) {
		once.Do(func() {
			close(done)
			<-stopped
			now := time.Now()
			stall, step = longest, now.Round(0).Sub(start.Round(0))-now.Sub(start)
		})
		return stall, step
	}
	t.Cleanup(func() { finish() })
	return finish
}
