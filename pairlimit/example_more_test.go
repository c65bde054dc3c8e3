package pairlimit_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

// A user who adopted a username is addressed by a business-scoped user ID
// and paced exactly like a phone number; logs show it masked.
func ExampleNewPair_bsuid() {
	pair, err := pairlimit.NewPair("106540352242922", "CO.1949266959121697")
	fmt.Println(pair.To(), pair, err)

	// Meta's example of 20 digits, and a parent BSUID: kept exactly.
	long, err := pairlimit.NewPair("106540352242922", "US.13491208655302741918")
	fmt.Println(long.To(), err)
	parent, err := pairlimit.NewPair("106540352242922", "US.ENT.11815799212886844830")
	fmt.Println(parent.To(), err)

	_, err = pairlimit.NewPair("106540352242922", "us.1949266959121697")
	fmt.Println(errors.As(err, new(*pairlimit.NumberError)))
	// Output:
	// CO.1949266959121697 106540352242922>CO.*************697 <nil>
	// US.13491208655302741918 <nil>
	// US.ENT.11815799212886844830 <nil>
	// true
}

// ReadyAt asks when a pair could take a reply without reserving anything:
// no probe, no debt left behind.
func ExampleLimiter_ReadyAt() {
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
	pair, _ := pairlimit.NewPair("106540352242922", "+237 690 00 00 01")
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	lim.ReserveN(start, pair, 2)

	at, _ := lim.ReadyAt(start, pair, 1)
	fmt.Println("ready at +", at.Sub(start))
	at, _ = lim.ReadyAt(start, pair, 1) // asking again changes nothing
	fmt.Println("still at +", at.Sub(start))
	// Output:
	// ready at + 12s
	// still at + 12s
}

// CancelAt gives back exactly what a reservation took, in any order of
// cancels, and a second cancel is harmless.
func ExampleReservation_CancelAt() {
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
	pair, _ := pairlimit.NewPair("106540352242922", "+237 690 00 00 01")
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

	first := lim.ReserveN(start, pair, 1)
	second := lim.ReserveN(start, pair, 3) // acts at +6s, owes until +24s
	second.CancelAt(start)
	second.CancelAt(start)
	first.CancelAt(start)
	at, _ := lim.ReadyAt(start, pair, 1)
	fmt.Println("the pair owes", at.Sub(start))
	// Output:
	// the pair owes 0s
}

// Two limiters sharing one store pace the same pairs as one: here two
// senders in one process; a Redis store does the same across processes.
func ExampleWithStore() {
	store := pairlimit.NewMemoryStore(nil)
	bot := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(store), pairlimit.WithMargin(0))
	agent := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(store), pairlimit.WithMargin(0))
	pair, _ := pairlimit.NewPair("106540352242922", "+237 690 00 00 01")
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

	bot.ReserveN(start, pair, 1)
	fmt.Println("the agent's message waits", agent.ReserveN(start, pair, 1).DelayFrom(start))
	// Output:
	// the agent's message waits 6s
}

// State is the rule a Store applies, as pure functions over one pair's
// state: what a Lua script or a SQL transaction reimplements.
func ExampleState() {
	var s pairstore.State // owes nothing
	t := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()

	s, first := s.Reserve(t, 2*6*time.Second, 1) // two bubbles
	s, second := s.Reserve(t, 6*time.Second, 2)
	fmt.Println("second acts at +", time.Duration(second.Act-t))

	s, ok := s.Cancel(first, t) // the second stands on it
	fmt.Println("first given back:", ok)
	s, ok = s.Cancel(second, t)
	fmt.Println("second given back:", ok, "; owes until +", time.Duration(s.Due-t))
	// Output:
	// second acts at + 12s
	// first given back: false
	// second given back: true ; owes until + 12s
}

// An option the limiter cannot honour is neither clamped nor ignored: its
// first decision says what is wrong, and nothing is reserved.
func ExampleWithBurstCap_invalid() {
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithBurstCap(50)) // Meta's burst is 45
	pair, _ := pairlimit.NewPair("106540352242922", "237690000001")
	_, err := lim.ReadyAt(time.Now(), pair, 1) // asks without reserving
	fmt.Println(errors.Is(err, pairlimit.ErrInvalidOption))
	fmt.Println(err)
	// Output:
	// true
	// pairlimit: invalid option WithBurstCap(50): the cap must be 1 to the policy's Burst, 45
}
