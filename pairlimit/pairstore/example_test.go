package pairstore_test

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/pairlimit/pairstore"
)

// A store applies one pure State method per decision: here two bursts
// reserved for one pair, the second given back exactly, and a 131056.
func ExampleState() {
	const s = int64(time.Second)
	var st pairstore.State // the zero State owes nothing
	st, first := st.Reserve(0, 6*time.Second, 1)
	st, second := st.Reserve(2*s, 12*time.Second, 2)
	fmt.Println("first acts at", first.Act/s, "s; second at", second.Act/s, "s; owes until", st.Due/s, "s")
	st, ok := st.Cancel(second, 2*s)
	fmt.Println("second given back:", ok, "; owes until", st.Due/s, "s")
	st, hold := st.Refuse(3*s, []time.Duration{time.Second, 4 * time.Second})
	fmt.Println("131056 holds", hold, "; owes until", st.Due/s, "s; may be forgotten at 20 s:", st.Expired(20*s, time.Minute))
	// Output:
	// first acts at 0 s; second at 6 s; owes until 18 s
	// second given back: true ; owes until 6 s
	// 131056 holds 1s ; owes until 6 s; may be forgotten at 20 s: false
}
