package redisstore_test

import (
	"os"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/wapace/wapace/internal/redistest"
	"github.com/wapace/wapace/pairlimit/pairlimittest"
	"github.com/wapace/wapace/pairlimit/pairstore"
	"github.com/wapace/wapace/redisstore"
	"github.com/wapace/wapace/throughput/throughputstore"
	"github.com/wapace/wapace/throughput/throughputtest"
)

// The kits on miniredis: a fast extra check of the scripts that runs
// without a Redis server. The proof is the same kits on a real Redis
// (conformance_test.go).
func TestConformanceOnMiniredis(t *testing.T) {
	if raceEnabled && os.Getenv(redistest.EnvURL) != "" {
		// The race detector would watch miniredis's Lua interpreter run
		// the scripts (110 s of the package's 160 at load 17); the client
		// code it could race in is the same on a real Redis, where the
		// kits run under -race as well (conformance_test.go). This extra
		// check runs in every test run without -race.
		t.Skip("under -race the kits run on the real Redis at " + redistest.EnvURL)
	}
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	n := 0
	prefix := func() string { n++; return "k" + string(rune('a'+n)) + ":" }
	t.Run("pairlimit", func(t *testing.T) {
		pairlimittest.TestStore(t, func(t *testing.T) pairstore.Store {
			return redisstore.New(rdb, redisstore.WithPrefix(prefix()))
		})
	})
	t.Run("throughput", func(t *testing.T) {
		throughputtest.TestStore(t, func(t *testing.T) throughputstore.Store {
			return redisstore.New(rdb, redisstore.WithPrefix(prefix())).Throughput()
		})
	})
}
