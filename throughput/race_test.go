//go:build race

package throughput_test

// Under the race detector the property tests run fewer of rapid's checks
// (see package racechecks).
import _ "github.com/wapace/wapace/internal/racechecks"
