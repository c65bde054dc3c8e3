//go:build race

package outbox_test

import (
	"flag"
	"os"

	_ "pgregory.net/rapid" // defines -rapid.checks before this init runs
)

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true

// Under the race detector the property tests run 20 of rapid's checks
// (its default is 100; -short divides by 5 again): the run without -race
// makes the full count, and 20 random cases still take every path past
// the detector at a fifth of its cost. -rapid.checks or RAPID_CHECKS
// still set the count.
func init() {
	if os.Getenv("RAPID_CHECKS") == "" {
		_ = flag.Set("rapid.checks", "20")
	}
}
