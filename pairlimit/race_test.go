//go:build race

package pairlimit_test

// Under the race detector the property tests run fewer of rapid's checks
// (see package racechecks).
import _ "github.com/wapace/wapace/internal/racechecks"

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true
