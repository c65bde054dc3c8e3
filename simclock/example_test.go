package simclock_test

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/simclock"
)

// Three workers each wait an hour, twice: six hours of simulated time pass
// at once, and every wake-up happens at its exact instant.
func Example() {
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	clk := simclock.New(start)
	clk.Run(func() {
		for i := 1; i <= 3; i++ {
			clk.Go(func() {
				clk.Sleep(time.Duration(i) * time.Hour)
				clk.Sleep(time.Duration(i) * time.Hour)
			})
		}
	})
	fmt.Println("simulated:", clk.Since(start))
	// Output:
	// simulated: 6h0m0s
}
