package backoff_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/errcodes"
)

// Meta's 4^X schedule against the usual doubling one: the cumulative wait
// after each failure.
func Example_metaVsDoubling() {
	usual := backoff.Exponential{Max: time.Minute} // doubling from 1 s, capped at a minute
	var meta, doubling time.Duration
	for retry := range 5 {
		meta += backoff.Meta.Delay(retry)
		doubling += usual.Delay(retry)
		fmt.Printf("failure %d: meta waited %4v, doubling %3v\n", retry+1, meta, doubling)
	}
	// Output:
	// failure 1: meta waited   1s, doubling  1s
	// failure 2: meta waited   5s, doubling  3s
	// failure 3: meta waited  21s, doubling  7s
	// failure 4: meta waited 1m25s, doubling 15s
	// failure 5: meta waited 5m41s, doubling 31s
}

func ExampleRetry() {
	// A pair still in debt refuses the first two sends. The schedule here is
	// Meta's shape scaled down to milliseconds so that the example runs fast;
	// production code passes backoff.Meta.
	fast := backoff.Exponential{Initial: time.Millisecond, Factor: 4}
	attempt := 0
	send := func(context.Context) error {
		attempt++
		if attempt <= 2 {
			return &errcodes.Error{HTTPStatus: 400, Code: errcodes.PairRateLimit}
		}
		return nil
	}
	err := backoff.Retry(context.Background(), fast, send,
		backoff.WithNotify(func(retry int, err error, wait time.Duration) {
			fmt.Printf("retry %d in %v after %v\n", retry, wait, err)
		}))
	fmt.Println("attempts:", attempt, "err:", err)
	// Output:
	// retry 0 in 1ms after errcodes: 131056 (Business Account, Consumer Account) pair rate limit hit (http 400)
	// retry 1 in 4ms after errcodes: 131056 (Business Account, Consumer Account) pair rate limit hit (http 400)
	// attempts: 3 err: <nil>
}

func ExampleRetry_deadline() {
	// A one-time code valid for 10 s cannot wait out Meta's third wait (16 s):
	// Retry gives up at once instead of sleeping and failing then.
	fast := backoff.Exponential{Initial: time.Millisecond, Factor: 4}
	deadline := time.Now().Add(10 * time.Millisecond)
	err := backoff.Retry(context.Background(), fast, func(context.Context) error {
		return errcodes.PairRateLimit
	}, backoff.WithDeadline(deadline))
	fmt.Println(errors.Is(err, backoff.ErrDeadline), errors.Is(err, errcodes.PairRateLimit))
	// Output:
	// true true
}
