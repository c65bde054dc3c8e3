// Package racechecks sizes the module's property tests for the race
// detector. A test package imports it, blank, from a file built only
// under -race:
//
//	//go:build race
//
//	package outbox_test
//
//	import _ "github.com/wapace/wapace/internal/racechecks"
//
// Its init then sets rapid's check count to 20 (rapid's default is 100;
// -short divides by 5 again): the run without -race makes the full count,
// and 20 random cases still take every path past the detector at a fifth
// of its cost. -rapid.checks or RAPID_CHECKS still set the count.
package racechecks

import (
	"flag"
	"os"
	"strconv"

	_ "pgregory.net/rapid" // defines -rapid.checks before this init runs
)

// Checks is the number of rapid checks under the race detector.
const Checks = 20

func init() {
	if os.Getenv("RAPID_CHECKS") == "" {
		_ = flag.Set("rapid.checks", strconv.Itoa(Checks))
	}
}
