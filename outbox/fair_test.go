package outbox_test

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/throughput"
)

// TestNumbersShareTheRun: several numbers' campaigns queued one block
// after another (EnqueueMany takes one number a call) are sent side by
// side, each number at its own figure, not one block at a time: a number
// waiting for its throughput slots must not hold every send of the Run
// while the other numbers' lanes wait behind it. Five upgraded numbers
// (1,000 msg/s each), 300 templates each in blocks of 100, take about
// 1,500 / 5,000 s; without the shares they took 0.66 s.
func TestNumbersShareTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		numbers := []string{"106540352242931", "106540352242932", "106540352242933", "106540352242934", "106540352242935"}
		var fakeOpts []cloudapitest.Option
		var opts []cloudapi.Option
		for _, id := range numbers {
			fakeOpts = append(fakeOpts, cloudapitest.WithNumberThroughput(id, throughput.Upgraded))
			opts = append(opts, cloudapi.WithNumberThroughput(id, throughput.Upgraded))
		}
		meta := cloudapitest.NewServer(t, fakeOpts...)
		o, _ := openSQLite(t)
		c := newClient(t, meta, opts...)
		const perNumber, block = 300, 100
		for b := 0; b < perNumber; b += block {
			for j, id := range numbers {
				var msgs []cloudapi.Message
				for i := range block {
					msgs = append(msgs, cloudapi.Template(fmt.Sprintf("+2376%02d%06d", j, b+i), "winter_sale", "en"))
				}
				res, err := o.EnqueueMany(t.Context(), id, msgs...)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					if r.Err != nil {
						t.Fatal(r.Err)
					}
				}
			}
		}
		start := time.Now()
		runErr, stop := startRun(t.Context(), o, c)
		if err := drainThenStop(t, o, runErr, stop, time.Minute); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		n := perNumber * len(numbers)
		if got := meta.Accepted(); got != n {
			t.Fatalf("%d accepted, want %d", got, n)
		}
		if k := meta.Count(errcodes.ThroughputLimit) + meta.Count(errcodes.PairRateLimit); k != 0 {
			t.Fatalf("%d refusals", k)
		}
		ideal := time.Duration(n) * time.Second / time.Duration(len(numbers)*throughput.Upgraded)
		t.Logf("%d templates over %d numbers in %v (ideal %v)", n, len(numbers), took, ideal)
		if took > ideal*13/10 {
			t.Errorf("%d templates over %d numbers took %v, want at most 1.3 x %v", n, len(numbers), took, ideal)
		}
	})
}

// TestSharedRunKeepsLaneOrder: with the sends shared between numbers
// (few sends, several numbers, lanes of several items, lanes picked by
// number from a cursor that wraps), every item is accepted exactly once
// and each lane's items in their order.
func TestSharedRunKeepsLaneOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		numbers := []string{"106540352242931", "106540352242932", "106540352242933"}
		meta := cloudapitest.NewServer(t)
		o, _ := openSQLite(t, outbox.WithConcurrency(9))
		c := newClient(t, meta)
		var want []string // keys, in enqueue order
		for j, id := range numbers {
			var msgs []cloudapi.Message
			for i := range 30 {
				for k := range 1 + i%3 { // lanes of 1, 2 and 3 items
					m := cloudapi.Template(fmt.Sprintf("+2376%02d%06d", j, i), "winter_sale", "en")
					m.IdempotencyKey = fmt.Sprintf("n%d-r%d-%d", j, i, k)
					want = append(want, m.IdempotencyKey)
					msgs = append(msgs, m)
				}
			}
			res, err := o.EnqueueMany(t.Context(), id, msgs...)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if r.Err != nil {
					t.Fatal(r.Err)
				}
			}
		}
		runErr, stop := startRun(t.Context(), o, c)
		if err := drainThenStop(t, o, runErr, stop, time.Hour); err != nil {
			t.Fatal(err)
		}
		sent := map[string]int{}
		var order []string
		for _, r := range meta.Requests() {
			if r.Status == 200 {
				sent[r.CallbackData]++
				order = append(order, r.CallbackData)
			}
		}
		for _, k := range want {
			if sent[k] != 1 {
				t.Errorf("%s accepted %d times, want 1", k, sent[k])
			}
		}
		// Each lane's items in order: item k of a lane after item k-1.
		pos := map[string]int{}
		for i, k := range order {
			pos[k] = i
		}
		for _, k := range want {
			var j, i, n int
			if _, err := fmt.Sscanf(k, "n%d-r%d-%d", &j, &i, &n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				if prev := fmt.Sprintf("n%d-r%d-%d", j, i, n-1); pos[prev] > pos[k] {
					t.Errorf("%s sent before %s", k, prev)
				}
			}
		}
		// One item of a lane in flight at a time: item k claimed once item
		// k-1 was accepted.
		at := func(key string, st outbox.State) time.Time {
			for _, tr := range mustGet(t, o, key).History {
				if tr.State == st {
					return tr.At
				}
			}
			t.Fatalf("%s never %v", key, st)
			return time.Time{}
		}
		for _, k := range want {
			var j, i, n int
			_, _ = fmt.Sscanf(k, "n%d-r%d-%d", &j, &i, &n)
			if n > 0 {
				prev := fmt.Sprintf("n%d-r%d-%d", j, i, n-1)
				if claimed, accepted := at(k, outbox.StateSending), at(prev, outbox.StateAccepted); claimed.Before(accepted) {
					t.Errorf("%s claimed at %v, before %s was accepted at %v", k, claimed, prev, accepted)
				}
			}
		}
		if k := meta.Count(errcodes.ThroughputLimit) + meta.Count(errcodes.PairRateLimit); k != 0 {
			t.Errorf("%d refusals", k)
		}
	})
}

// TestShareLeavesNoSendIdle: a number's share orders the picks; it never
// leaves a send idle. Number B has live items, but one lane whose items
// wait 6 s apart for the pair; number A's campaign gets the sends B
// cannot use (all 4 but B's one at most), not just its half.
func TestShareLeavesNoSendIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := "106540352242931", "106540352242932"
		meta := cloudapitest.NewServer(t)
		// The most items sending at once, from the recorded transitions.
		var mu sync.Mutex
		sending, most := 0, 0
		o, _ := openSQLite(t, outbox.WithConcurrency(4), outbox.WithObserver(func(e outbox.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch e.State {
			case outbox.StateSending:
				sending++
				most = max(most, sending)
			case outbox.StateQueued:
			default:
				sending--
			}
		}))
		c := newClient(t, meta) // 80 msg/s: A's sends wait for their slots
		var msgs []cloudapi.Message
		for i := range 5 {
			msgs = append(msgs, cloudapi.Template("+237690000001", "winter_sale", "en", cloudapi.Body(cloudapi.TextParam(fmt.Sprint(i)))))
		}
		if _, err := o.EnqueueMany(t.Context(), b, msgs...); err != nil {
			t.Fatal(err)
		}
		msgs = nil
		for i := range 200 {
			msgs = append(msgs, cloudapi.Template(fmt.Sprintf("+2376%08d", 100+i), "winter_sale", "en"))
		}
		if _, err := o.EnqueueMany(t.Context(), a, msgs...); err != nil {
			t.Fatal(err)
		}
		runErr, stop := startRun(t.Context(), o, c)
		time.Sleep(time.Second)
		stopRun(t, runErr, stop)
		mu.Lock()
		defer mu.Unlock()
		if most < 4 {
			t.Errorf("at most %d sends in flight, want all 4 (B can use only one)", most)
		}
	})
}
