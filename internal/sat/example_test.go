package sat_test

import (
	"fmt"
	"math"
	"time"

	"github.com/wapace/wapace/internal/sat"
)

// An endless hold added to an instant stays at the end of time.
func ExampleAdd() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano()
	fmt.Println(sat.Add(now, math.MaxInt64) == math.MaxInt64)
	fmt.Println(sat.Add(now, int64(time.Second))-now == int64(time.Second))
	// Output:
	// true
	// true
}
