package clockwait_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/wapace/wapace/internal/clockwait"
)

// A wait on a mock clock ends when the clock is moved past it, and a wait
// whose context ends reports why.
func ExampleSleep() {
	c := clock.NewMock()
	done := make(chan error)
	go func() { done <- clockwait.Sleep(context.Background(), c, 6*time.Second) }()
	for {
		c.Add(time.Second)
		select {
		case err := <-done:
			fmt.Println("woke:", err)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			fmt.Println(clockwait.Sleep(ctx, c, time.Hour))
			return
		default:
		}
	}
	// Output:
	// woke: <nil>
	// context canceled
}
