package throughputtest_test

import (
	"testing"

	"github.com/wapace/wapace/throughput/throughputstore"
	"github.com/wapace/wapace/throughput/throughputtest"
)

func TestMemoryStore(t *testing.T) {
	throughputtest.TestStore(t, func(t *testing.T) throughputstore.Store { return throughputstore.NewMemoryStore(nil) })
}
