package instant_test

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/internal/clocktest"
	"github.com/wapace/wapace/internal/instant"
)

// A send due a second from now stays a second away when the system's wall
// clock is stepped forward by a minute: its instant was kept on the
// monotonic clock, and the Time made from it reads as the stepped clock
// does, once the Scale was given a reading of it.
func ExampleScale() {
	clk := clocktest.NewStepped()
	sc := instant.Of(clk.Now())
	now := clk.Now()
	due := sc.Nanos(now) + int64(time.Second)

	clk.Step(time.Minute)
	stepped := clk.Now() // read after the step, and given to the Scale
	fmt.Println(time.Duration(due - sc.Nanos(stepped)).Round(100 * time.Millisecond))
	at := sc.Time(due)
	fmt.Println(at.Sub(stepped).Round(100 * time.Millisecond))                   // on the monotonic clock
	fmt.Println(at.Round(0).Sub(stepped.Round(0)).Round(100 * time.Millisecond)) // on the wall clock
	// Output:
	// 1s
	// 1s
	// 1s
}
