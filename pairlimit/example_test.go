package pairlimit_test

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/pairlimit"
)

// A bot answers with three bubbles at once, then has a fourth message for
// the same user one second later.
func Example() {
	lim := pairlimit.New(pairlimit.Meta) // default 250 ms margin
	pair, err := pairlimit.NewPair("106540352242922", "+237 690 00 00 01")
	if err != nil {
		fmt.Println(err)
		return
	}
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

	reply := lim.ReserveN(start, pair, 3)
	fmt.Printf("3 bubbles go at +%v\n", reply.TimeToAct().Sub(start))

	asked := start.Add(time.Second)
	next := lim.ReserveN(asked, pair, 1)
	fmt.Printf("4th message asked at +1s goes at +%v (waits %v)\n", next.TimeToAct().Sub(start), next.DelayFrom(asked))

	other, _ := pairlimit.NewPair("106540352242922", "+237 690 00 00 02")
	fmt.Printf("another user at +1s waits %v\n", lim.ReserveN(asked, other, 1).DelayFrom(asked))
	// Output:
	// 3 bubbles go at +0s
	// 4th message asked at +1s goes at +18.25s (waits 17.25s)
	// another user at +1s waits 0s
}

// A 131056 arrives two minutes after a burst of 20: Replay shows the
// refused message is the victim of the burst.
func ExampleReplay() {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var sends []time.Time
	for i := range 20 {
		sends = append(sends, start.Add(time.Duration(i)*50*time.Millisecond))
	}
	sends = append(sends, start.Add(100*time.Second))

	v := pairlimit.Replay(pairlimit.Meta, sends)[20]
	fmt.Printf("message at +%v accepted=%v: burst of %d at +%v still owed %v\n",
		v.At.Sub(start), v.Accepted, v.BurstLen, v.BurstStart.Sub(start), v.Debt)
	// Output:
	// message at +1m40s accepted=false: burst of 20 at +0s still owed 20s
}

func ExampleLimiter_Refused() {
	lim := pairlimit.New(pairlimit.Meta)
	pair, _ := pairlimit.NewPair("106540352242922", "237690000001")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for range 4 {
		hold := lim.Refused(now, pair) // Meta answered 131056
		fmt.Println("hold", hold)
		now = now.Add(hold)
	}
	// Output:
	// hold 1s
	// hold 4s
	// hold 16s
	// hold 1m4s
}
