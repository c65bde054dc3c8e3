package pairlimittest_test

import (
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairlimittest"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

func TestMemoryStore(t *testing.T) {
	pairlimittest.TestStore(t, func(t *testing.T) pairstore.Store {
		return pairlimit.NewMemoryStore(clock.New())
	})
}
