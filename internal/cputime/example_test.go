package cputime_test

import (
	"fmt"

	"github.com/wapace/wapace/internal/cputime"
)

// CPU per operation: read Self before and after, divide by the count.
func Example() {
	before := cputime.Self()
	n := 0
	for i := range 1_000_000 {
		n += i % 7
	}
	used := cputime.Self() - before
	fmt.Println(n > 0, used >= 0)
	// Output: true true
}
