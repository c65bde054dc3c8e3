package throughput_test

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
)

func ExampleLimiter() {
	lim := throughput.New(throughput.Default) // 80 messages/s
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var last time.Time
	for range 800 {
		last = lim.ReserveN(start, 1).TimeToAct()
	}
	fmt.Println("burst:", lim.Burst(), "per second:", lim.PerSecond())
	fmt.Println("800 sends take", last.Sub(start).Round(time.Millisecond))

	// Meta answered 130429: hold the number for the wait errcodes gives it.
	cl := errcodes.ThroughputLimit.Class()
	hold := lim.Throttled(last, cl.Wait, cl.MaxWait)
	fmt.Println("after a 130429 the number waits", hold)
	// Output:
	// burst: 1 per second: 80
	// 800 sends take 10.114s
	// after a 130429 the number waits 1s
}

func ExampleTier() {
	tier := throughput.NewTier(3) // a tiny tier, for the example
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i, to := range []string{"+237 690 00 00 01", "+237 690 00 00 02", "237690000001", "+237 690 00 00 03", "+237 690 00 00 04"} {
		ok, retryAt := tier.Admit(start.Add(time.Duration(i)*time.Hour), to)
		if ok {
			fmt.Println(to, "admitted")
		} else {
			fmt.Println(to, "refused until", retryAt.Sub(start))
		}
	}
	// Output:
	// +237 690 00 00 01 admitted
	// +237 690 00 00 02 admitted
	// 237690000001 admitted
	// +237 690 00 00 03 admitted
	// +237 690 00 00 04 refused until 25h0m0s
}
