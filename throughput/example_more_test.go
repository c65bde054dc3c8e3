package throughput_test

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/throughput"
)

// A template that was admitted by the tier but then never sent (the send
// was cancelled) gives its count back.
func ExampleTier_Claim() {
	tier := throughput.NewTier(1)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

	c := tier.Claim(now, "+237 690 00 00 01")
	fmt.Println("admitted:", c.OK(), "counted:", tier.Count(now))
	c.Release() // the message never went out
	fmt.Println("after release counted:", tier.Count(now))
	fmt.Println("another recipient admitted:", tier.Claim(now, "CO.1949266959121697").OK())
	// Output:
	// admitted: true counted: 1
	// after release counted: 0
	// another recipient admitted: true
}

// A tier of 0 admits no new recipient, and says to retry a day later, not
// at an instant already past.
func ExampleNewTier_zero() {
	tier := throughput.NewTier(0)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ok, retryAt := tier.Admit(now, "+237 690 00 00 01")
	fmt.Println(ok, retryAt.Sub(now))
	// Output:
	// false 24h0m0s
}

// Two Limiters for one number, sharing a store, admit the number's rate
// between them, not each.
func ExampleWithStore() {
	store := throughput.NewMemoryStore()
	a := throughput.New(throughput.Coexistence, throughput.WithStore(store, "106540352242922"))
	b := throughput.New(throughput.Coexistence, throughput.WithStore(store, "106540352242922"))
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	admitted := 0
	for i := range 100 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if l.AllowN(now, 1) {
			admitted++
		}
	}
	fmt.Println("admitted at once:", admitted)
	// Output:
	// admitted at once: 1
}

// BucketState is the rule a Store applies to a number's bucket, as pure
// functions: what a Lua script reimplements. Here a bucket of burst 2 and
// one token a second.
func ExampleBucketState() {
	var s throughput.BucketState // a full bucket
	t := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
	for id := uint64(1); id <= 3; id++ {
		var tk throughput.BucketTicket
		s, tk = s.Reserve(t, 1, time.Second, 2, id)
		fmt.Println("send", id, "at +", time.Duration(tk.Act-t))
	}
	// Output:
	// send 1 at + 0s
	// send 2 at + 0s
	// send 3 at + 1s
}
