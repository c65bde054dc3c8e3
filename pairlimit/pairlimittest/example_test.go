package pairlimittest_test

import (
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairlimittest"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

// Run the suite against a store from a test of its own package (here the
// in-memory store; a Redis store passes a fresh key prefix per call).
func ExampleTestStore() {
	_ = func(t *testing.T) {
		pairlimittest.TestStore(t, func(t *testing.T) pairstore.Store {
			return pairlimit.NewMemoryStore(clock.New())
		})
	}
}
