package throughputtest_test

import (
	"testing"

	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/throughputtest"
)

func TestMemoryStore(t *testing.T) {
	throughputtest.TestStore(t, func(t *testing.T) throughput.Store { return throughput.NewMemoryStore(nil) })
}
