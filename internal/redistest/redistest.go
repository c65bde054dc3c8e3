// Package redistest finds a real Redis for tests: the server named by
// WAPACE_REDIS_URL, else a redis-server from PATH started for the test on a
// free loopback port, else the test is skipped. With
// WAPACE_REQUIRE_SERVICES=1 (as in CI) that skip is a failure.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wapace/wapace/internal/redisserver"
)

// EnvURL names the environment variable holding a Redis URL, such as
// redis://127.0.0.1:6379/0.
const EnvURL = "WAPACE_REDIS_URL"

// EnvRequire names the environment variable that, set to 1, turns a skip
// for want of a service into a failure.
const EnvRequire = "WAPACE_REQUIRE_SERVICES"

// Unavailable skips tb, or fails it when services are required.
func Unavailable(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv(EnvRequire) == "1" {
		tb.Fatalf("%s=1 but %s", EnvRequire, why)
	}
	tb.Skip(why)
}

// URL returns the URL of a Redis server for tb: WAPACE_REDIS_URL when set,
// else one started from PATH for tb (stopped by tb.Cleanup). Without either
// it skips tb (fails it under WAPACE_REQUIRE_SERVICES=1).
func URL(tb testing.TB) string {
	tb.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return Start(tb).URL
}

// Start starts a redis-server of tb's own, which tb may kill; it is stopped
// by tb.Cleanup. Without redis-server on PATH it skips tb (fails it under
// WAPACE_REQUIRE_SERVICES=1).
func Start(tb testing.TB) *redisserver.Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := redisserver.Start(ctx)
	if errors.Is(err, redisserver.ErrNotFound) {
		Unavailable(tb, "no Redis: set "+EnvURL+" or put redis-server on PATH")
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Client returns a client of the Redis of URL(tb), closed by tb.Cleanup,
// after checking that the server answers.
func Client(tb testing.TB) *redis.Client {
	tb.Helper()
	opt, err := redis.ParseURL(URL(tb))
	if err != nil {
		tb.Fatalf("%s: %v", EnvURL, err)
	}
	c := redis.NewClient(opt)
	tb.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		Unavailable(tb, "Redis does not answer: "+err.Error())
	}
	return c
}

// Prefix returns a key prefix unique to this call, so that tests sharing
// one server (WAPACE_REDIS_URL) never see each other's keys.
func Prefix(tb testing.TB) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "wapacetest:" + hex.EncodeToString(b) + ":"
}
