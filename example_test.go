package wapace_test

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/pairlimit"
)

// The pieces in one glance: what a 131056 means, how long Meta says to
// wait, and how pacing avoids it.
func Example() {
	cl := errcodes.Lookup(errcodes.PairRateLimit)
	fmt.Println("131056 scope:", cl.Scope, "retryable:", cl.Retryable)
	fmt.Println("Meta's retry waits:", backoff.Meta.Delay(0), backoff.Meta.Delay(1), backoff.Meta.Delay(2))

	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
	pair, _ := pairlimit.NewPair("106540352242922", "+237 690 00 00 01")
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	lim.ReserveN(now, pair, 20) // a 20-bubble burst
	fmt.Println("next message to that user waits:", lim.ReserveN(now, pair, 1).DelayFrom(now))
	// Output:
	// 131056 scope: pair retryable: true
	// Meta's retry waits: 1s 4s 16s
	// next message to that user waits: 2m0s
}
