package clocktest_test

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/internal/clocktest"
)

// A step of the wall clock moves a reading's wall clock, not its
// monotonic one, which Sub uses.
func ExampleWallStepped() {
	now := time.Now()
	stepped := clocktest.WallStepped(now, time.Hour)
	fmt.Println(stepped.Sub(now))                   // on the monotonic clock
	fmt.Println(stepped.Round(0).Sub(now.Round(0))) // on the wall clock
	// Output:
	// 0s
	// 1h0m0s
}
