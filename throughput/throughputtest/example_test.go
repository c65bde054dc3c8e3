package throughputtest_test

import (
	"testing"

	"github.com/wapace/wapace/throughput/throughputstore"
	"github.com/wapace/wapace/throughput/throughputtest"
)

// Run the suite against a store from a test of its own package (here the
// in-memory store; a Redis store passes a fresh key prefix per call).
func ExampleTestStore() {
	_ = func(t *testing.T) {
		throughputtest.TestStore(t, func(t *testing.T) throughputstore.Store {
			return throughputstore.NewMemoryStore(nil)
		})
	}
}
