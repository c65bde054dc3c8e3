package pairlimittest_test

import (
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairlimittest"
)

func TestMemoryStore(t *testing.T) {
	pairlimittest.TestStore(t, func(t *testing.T) pairlimit.Store {
		return pairlimit.NewMemoryStore(clock.New())
	})
}
