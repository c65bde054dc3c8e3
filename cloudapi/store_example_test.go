package cloudapi_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/benbjohnson/clock"
	"github.com/redis/go-redis/v9"
	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/redisstore"
)

// A Client keeps its limits in Redis: after it writes to a user, any other
// process's limiter over the same Redis sees that user's pair in debt.
func ExampleWithStore() {
	mr, err := miniredis.Run() // in production: your Redis
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	st := redisstore.New(rdb, redisstore.WithPrefix("example:"))

	clk := clock.NewMock()
	clk.Set(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	meta := cloudapitest.NewServer(nil, cloudapitest.WithClock(clk))
	defer meta.Close()
	web, err := cloudapi.New("TOKEN", cloudapi.WithStore(st), cloudapi.WithClock(clk),
		cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		fmt.Println(err)
		return
	}

	if _, err := web.Send(context.Background(), "106540352242922", cloudapi.Text("+237 690 00 00 01", "hello")); err != nil {
		fmt.Println(err)
		return
	}
	p, _ := pairlimit.NewPair("106540352242922", "+237 690 00 00 01")
	elsewhere := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(st)) // another process's limiter
	ready, err := elsewhere.ReadyAt(clk.Now(), p, 1)
	fmt.Println(ready.Sub(clk.Now()), err)
	// Output: 6.25s <nil>
}
