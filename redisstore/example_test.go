package redisstore_test

import (
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/redisstore"
)

// Two limiters, as in two processes, share one Redis: the second sees the
// first's debt.
func Example() {
	mr, err := miniredis.Run() // in production: your Redis
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	st := redisstore.New(rdb, redisstore.WithPrefix("example:"))

	web := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(st))
	worker := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(st))
	p, _ := pairlimit.NewPair("106540352242922", "+237 690 00 00 01")
	t0 := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

	a := web.ReserveN(t0, p, 2) // a two-bubble reply
	b := worker.ReserveN(t0, p, 1)
	fmt.Println(a.DelayFrom(t0), b.DelayFrom(t0))
	// Output: 0s 12.25s
}
