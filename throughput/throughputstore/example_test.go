package throughputstore_test

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/throughput/throughputstore"
)

// A store applies one pure BucketState method per decision: a bucket of
// burst 2 at 10 messages per second admits two at once, then one every
// 100 ms; a give-back returns the last token exactly.
func ExampleBucketState() {
	const ms = int64(time.Millisecond)
	interval := 100 * time.Millisecond
	var st throughputstore.BucketState // a full bucket
	var tk throughputstore.BucketTicket
	for id := uint64(1); id <= 3; id++ {
		st, tk = st.Reserve(0, 1, interval, 2, id)
		fmt.Println("token", id, "at", tk.Act/ms, "ms")
	}
	st, ok := st.Cancel(tk, 0)
	fmt.Println("last given back:", ok, "; next at", st.Next(0, 1, interval, 2)/ms, "ms")
	// Output:
	// token 1 at 0 ms
	// token 2 at 0 ms
	// token 3 at 100 ms
	// last given back: true ; next at 100 ms
}

// A tier counts distinct recipients in a rolling window: a recipient
// already counted is admitted again for free.
func ExampleTierState() {
	var st throughputstore.TierState
	window := 24 * time.Hour
	_, ok, _ := st.Claim(1, 0, 1, window)
	fmt.Println("first recipient:", ok)
	_, ok, retryAt := st.Claim(2, int64(time.Hour), 1, window)
	fmt.Println("second recipient:", ok, "; retry at", time.Duration(retryAt))
	// Output:
	// first recipient: true
	// second recipient: false ; retry at 24h0m0s
}
