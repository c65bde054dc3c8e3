package cloudapi_test

import (
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// sharedStore is a cloudapi.Store in memory: the reference stores of
// pairlimit and throughput, as several processes would share on Redis.
type sharedStore struct {
	pairstore.Store
	tp throughputstore.Store
}

func (s sharedStore) Throughput() throughputstore.Store { return s.tp }

// newSharedStore returns an empty sharedStore on the real clock.
func newSharedStore() sharedStore {
	return sharedStore{Store: pairlimit.NewMemoryStore(nil), tp: throughputstore.NewMemoryStore(nil)}
}
