package redisstore_test

import (
	"testing"

	"github.com/wapace/wapace/internal/redistest"
	"github.com/wapace/wapace/pairlimit/pairlimittest"
	"github.com/wapace/wapace/pairlimit/pairstore"
	"github.com/wapace/wapace/redisstore"
	"github.com/wapace/wapace/throughput/throughputstore"
	"github.com/wapace/wapace/throughput/throughputtest"
)

func TestPairStoreConformance(t *testing.T) {
	rdb := redistest.Client(t)
	pairlimittest.TestStore(t, func(t *testing.T) pairstore.Store {
		return redisstore.New(rdb, redisstore.WithPrefix(redistest.Prefix(t)))
	})
}

func TestThroughputStoreConformance(t *testing.T) {
	rdb := redistest.Client(t)
	throughputtest.TestStore(t, func(t *testing.T) throughputstore.Store {
		return redisstore.New(rdb, redisstore.WithPrefix(redistest.Prefix(t))).Throughput()
	})
}
