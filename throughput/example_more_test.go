package throughput_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/throughputstore"
	"github.com/wapace/wapace/throughput/usage"
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
	store := throughputstore.NewMemoryStore(nil)
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

// throughputstore.BucketState is the rule a Store applies to a number's bucket, as pure
// functions: what a Lua script reimplements. Here a bucket of burst 2 and
// one token a second.
func ExampleBucketState() {
	var s throughputstore.BucketState // a full bucket
	t := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
	for id := uint64(1); id <= 3; id++ {
		var tk throughputstore.BucketTicket
		s, tk = s.Reserve(t, 1, time.Second, 2, id)
		fmt.Println("send", id, "at +", time.Duration(tk.Act-t))
	}
	// Output:
	// send 1 at + 0s
	// send 2 at + 0s
	// send 3 at + 1s
}

// A Budget counts only the usage entries of the management API for its own
// WABA: Meta's header also carries other types and may name other objects,
// and none of them holds it. Only a refusal holds message sends.
func ExampleBudget_Observe() {
	header := `{"102290129340398":[{"type":"whatsapp_business_management","call_count":100,"estimated_time_to_regain_access":12},` +
		`{"type":"whatsapp","call_count":100,"estimated_time_to_regain_access":60}],` +
		`"998877665544332":[{"type":"whatsapp_business_management","call_count":100,"estimated_time_to_regain_access":30}]}`
	entries, _ := usage.Parse(header)
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

	b := throughput.NewBudget(5_000, throughput.WithBusinessID("102290129340398"))
	fmt.Println("management calls held for", b.Observe(start, entries))
	fmt.Println("messages held:", b.RefusedUntil().After(start))
	cl := errcodes.WABARateLimit.Class() // Meta answered 80007
	b.Hold(start, cl.Wait, cl.MaxWait)
	fmt.Println("after 80007, messages held until +", b.RefusedUntil().Sub(start))
	fmt.Println(len(usage.Select(entries, "", usage.TypeManagement)), "management entries in the header")
	// Output:
	// management calls held for 12m0s
	// messages held: false
	// after 80007, messages held until + 1m0s
	// 2 management entries in the header
}

// A number in maintenance (131057, say during a throughput upgrade) is held
// for the schedule errcodes gives the code: polled after 10, 20 and 40 s,
// then every minute, until Meta accepts a send again.
func ExampleLimiter_Hold() {
	lim := throughput.New(throughput.Default)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cl := errcodes.Maintenance.Class()
	for range 4 {
		hold := lim.Hold(now, cl.Wait, cl.MaxWait)
		fmt.Println("131057: held", hold)
		now = now.Add(hold)
	}
	lim.Accepted(now)
	fmt.Println("after an acceptance:", lim.Hold(now, cl.Wait, cl.MaxWait))
	// Output:
	// 131057: held 10s
	// 131057: held 20s
	// 131057: held 40s
	// 131057: held 1m0s
	// after an acceptance: 10s
}

// An option a limit cannot honour is neither clamped nor ignored: every
// decision says what is wrong, and nothing is admitted. A ReserveN of 0
// messages checks the configuration without spending anything.
func ExampleWithHeadroom_invalid() {
	lim := throughput.New(throughput.Default, throughput.WithHeadroom(1.5))
	r := lim.ReserveN(time.Now(), 1)
	fmt.Println(r.OK(), errors.Is(r.Err(), throughput.ErrInvalidOption))
	fmt.Println(r.Err())

	tier := throughput.NewTier(throughput.Tier2K, throughput.WithHeadroom(0.1))
	fmt.Println(tier.Claim(time.Now(), "237690000001").Err())
	// Output:
	// false true
	// throughput: invalid option WithHeadroom(1.5): the fraction must be in [0, 0.9]
	// throughput: invalid option WithHeadroom applies to New only, not to NewTier
}
