//go:build race

package mcptool_test

// Under the race detector the property tests run fewer of rapid's checks
// (see package racechecks).
import _ "github.com/wapace/wapace/internal/racechecks"
