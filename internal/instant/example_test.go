package instant_test

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/internal/clocktest"
	"github.com/wapace/wapace/internal/instant"
)

// A send due a second from now stays a second away when the system's wall
// clock is stepped forward by a minute: its instant was kept on the
// monotonic clock.
func ExampleScale() {
	sc := instant.Of(time.Now())
	now := time.Now()
	due := sc.Nanos(now) + int64(time.Second)

	stepped := clocktest.WallStepped(now, time.Minute) // the clock read after a step
	fmt.Println(time.Duration(due - sc.Nanos(stepped)))
	fmt.Println(sc.Time(due).Sub(stepped))
	fmt.Println(time.Duration(due - stepped.UnixNano()).Round(time.Millisecond)) // on the wall clock
	// Output:
	// 1s
	// 1s
	// -59s
}
