package slotmoves_test

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/internal/slotmoves"
	"github.com/wapace/wapace/throughput"
)

// A holder of a moving reservation reads its move channel and its
// instant, and reads both again when the channel closes: here 81 slots
// at 80 msg/s put the last about a second out; raising the figure to
// 1,000 msg/s moves it within a tenth of a second.
func Example() {
	moving := slotmoves.Option.(func() throughput.Option)
	moved := slotmoves.Moved.(func(throughput.Reservation) <-chan struct{})

	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	lim := throughput.New(throughput.Default, moving())
	var last throughput.Reservation
	for range 81 {
		last = lim.ReserveN(t0, 1)
	}
	ch := moved(last)
	before := last.TimeToAct().Sub(t0)
	fmt.Println("a second out:", before >= time.Second)

	if err := lim.SetMPSAt(t0, throughput.Upgraded); err != nil {
		fmt.Println(err)
		return
	}
	<-ch // closed by the move
	fmt.Println("moved within 100 ms:", last.TimeToAct().Sub(t0) <= 100*time.Millisecond)
	fmt.Println("a plain Limiter's reservations never move:", moved(throughput.New(throughput.Default).ReserveN(t0, 1)) == nil)
	// Output:
	// a second out: true
	// moved within 100 ms: true
	// a plain Limiter's reservations never move: true
}
