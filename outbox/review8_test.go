//go:build review8

package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// Review 8 (wave 3, session 6): findings in files other engineers own
// this session, each a failing test for its owner. Run them with
// `go test -tags review8 -run Review8 ./outbox`.

// enqueueReview8 queues n texts from from, each to its own recipient, its
// idempotency key (and so the fake's CallbackData) k0..k(n-1).
func enqueueReview8(t *testing.T, o *outbox.Outbox, n int) []string {
	t.Helper()
	var keys []string
	for i := range n {
		k := fmt.Sprintf("k%d", i)
		m := cloudapi.Text(recipient(i), k)
		m.IdempotencyKey = k
		if _, err := o.Enqueue(t.Context(), from, m); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys
}

// receivedBy counts the requests the fake received, by CallbackData.
func receivedBy(meta *cloudapitest.Server) map[string]int {
	got := map[string]int{}
	for _, r := range meta.Requests() {
		got[r.CallbackData]++
	}
	return got
}

// TestReview8StopGraceFencesWaitingSends: Run stops renewing its leases
// once its context ends, but lets the sends in flight go on for the stop
// grace (default 5 s). Once two thirds of the lease have passed since
// the last renewal, the fence closes during the grace: with a lease of
// 600 ms (review 7's chaos test used 300 ms) and Meta answering in 1 s
// (Run then keeps ~125 sends in flight, their slots 1.5 s deep at 80
// msg/s), every send still waiting for its slot is refused by
// the fence, never written, and recorded as an ordinary failed submission
// (outcome: "not submitted", requeued a minute later, its attempt
// counted) instead of "run stopped before the request was written" (due
// at once, uncounted), as Run's doc promises for an item whose request
// was not written when Run stopped. (A second worker sweeping the
// expired claims meanwhile would make them submitted_unknown although
// never sent.)
//
// At fault: outbox/run.go, run()'s stop loop (no renew during the grace)
// and outcome() (a fence refusal, errFenced, is counted and delayed like
// a connection failure).
func TestReview8StopGraceFencesWaitingSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		o, _ := openSQLite(t, outbox.WithLease(600*time.Millisecond))
		// Meta answers a second late: Run keeps about 125 sends in
		// flight, whose slots span 1.5 s at the number's 80 msg/s.
		c := slowClient(t, meta, time.Second)
		keys := enqueueReview8(t, o, 2000)
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- o.Run(ctx, c) }()
		time.Sleep(10 * time.Second)
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
		got := receivedBy(meta)
		unsent, counted, later, unknown := 0, 0, 0, 0
		var example outbox.Item
		for _, k := range keys {
			if got[k] > 0 {
				continue
			}
			it := mustGet(t, o, k)
			claimed := false
			for _, h := range it.History {
				claimed = claimed || h.State == outbox.StateSending
			}
			if !claimed {
				continue
			}
			unsent++
			switch {
			case it.State == outbox.StateSubmittedUnknown:
				unknown++
			case it.State != outbox.StateQueued:
				t.Errorf("%s, never sent: %v (%s)", k, it.State, it.Reason)
			case it.Attempts > 0:
				counted++
				example = it
			}
			if it.State == outbox.StateQueued && it.Reason != "run stopped before the request was written" {
				later++
				example = it
			}
		}
		t.Logf("sent before Run returned: %d of %d; claimed, never sent: %d", len(got), len(keys), unsent)
		if counted > 0 || later > 0 || unknown > 0 {
			t.Errorf("of %d claimed items never sent, after Run stopped: %d with their attempt counted, %d requeued for another reason than the stop, %d unknown; e.g. %s: %v, attempts %d, %q",
				unsent, counted, later, unknown, example.Key, example.State, example.Attempts, example.Reason)
		}
	})
}

// TestReview8IdempotencyMemoryFullFailsUnsent: every outbox send carries
// its item's key, and Run keeps up to WithConcurrency (1,024 by default)
// sends in flight, whatever the Client's idempotency memory holds
// (WithIdempotencyMemory; its doc asks to keep it above the sends in
// flight, which Run's sizing never looks at). A send the Client refuses
// with ErrIdempotencyMemoryFull (not submitted, nothing sent) is recorded
// as a failed submission: requeued a minute later, its attempt counted,
// and after maxDispatches (10) such refusals the message fails for good,
// "not sent", although nothing was wrong with it and Meta never saw it.
// ErrInProgress, the other local refusal, is requeued at once uncounted.
//
// Here: 60 messages, one number at 80 msg/s, Meta answering 200 ms late,
// a Client remembering 4 keys. All 60 can go in under a minute at 4 in
// flight (20 msg/s); after 30 simulated minutes some still wait or failed.
//
// At fault: outbox/run.go outcome() (ErrIdempotencyMemoryFull is not
// handled as the local, unsent refusal it is), and inflight.go's budget
// (it could be bounded by the Client's memory).
func TestReview8IdempotencyMemoryFullFailsUnsent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		o, _ := openSQLite(t)
		c := slowClient(t, meta, 200*time.Millisecond, cloudapi.WithIdempotencyMemory(4, time.Hour))
		keys := enqueueReview8(t, o, 60)
		runFor(t, o, c, 30*time.Minute)
		got := receivedBy(meta)
		states := map[outbox.State]int{}
		var example outbox.Item
		for _, k := range keys {
			it := mustGet(t, o, k)
			states[it.State]++
			if it.State != outbox.StateAccepted {
				example = it
			}
			if got[k] > 1 {
				t.Errorf("%s sent %d times", k, got[k])
			}
		}
		if states[outbox.StateAccepted] != len(keys) {
			t.Errorf("after 30 min: %v; e.g. %s: %v, attempts %d, %q", states, example.Key, example.State, example.Attempts, example.Reason)
		}
	})
}

// TestReview8CutMidRun: one number at 1,000 msg/s, Meta answering 400 ms
// late (Run keeps ~630 sends in flight), is cut to 80 msg/s after 3 s
// (c.Number(from).SetMPSAt): the hundreds of claimed sends waiting in the
// Client move to the new pace, up to 8 s later, past two thirds of a 3 s
// lease. Run renews their leases meanwhile: none may be fenced (refused,
// requeued, counted), none unknown or failed, none sent twice, and no
// second after the cut may carry more than 80.
func TestReview8CutMidRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1000))
		o, _ := openSQLite(t, outbox.WithLease(3*time.Second))
		c := slowClient(t, meta, 400*time.Millisecond, cloudapi.WithThroughput(1000))
		keys := enqueueReview8(t, o, 6000)
		start := time.Now()
		cut := start.Add(3 * time.Second)
		go func() {
			time.Sleep(3 * time.Second)
			if err := c.Number(from).SetMPSAt(time.Now(), 80); err != nil {
				t.Error(err)
			}
		}()
		runFor(t, o, c, 3*time.Minute)
		got := receivedBy(meta)
		states := map[outbox.State]int{}
		fenced, counted := 0, 0
		var example outbox.Item
		for _, k := range keys {
			it := mustGet(t, o, k)
			states[it.State]++
			if got[k] > 1 {
				t.Errorf("%s sent %d times", k, got[k])
			}
			for _, h := range it.History {
				if h.State == outbox.StateQueued && h.Reason != "" {
					fenced++
					example = it
					break
				}
			}
			if it.Attempts > 1 {
				counted++
			}
		}
		var after []time.Time
		for _, r := range meta.Requests() {
			if !r.At.Before(cut.Add(time.Second)) {
				after = append(after, r.At)
			}
		}
		most := 0
		for i, a := range after {
			n := 0
			for _, b := range after[i:] {
				if b.After(a.Add(time.Second)) {
					break
				}
				n++
			}
			most = max(most, n)
		}
		t.Logf("states %v; %d requeued, %d with more than one attempt; most in a second after the cut: %d", states, fenced, counted, most)
		if fenced > 0 {
			t.Errorf("%d items requeued; e.g. %s: %+v", fenced, example.Key, example.History)
		}
		if states[outbox.StateFailed]+states[outbox.StateSubmittedUnknown] > 0 {
			t.Errorf("states %v", states)
		}
		if most > 80 {
			t.Errorf("%d requests in a second after the cut to 80 msg/s", most)
		}
	})
}

// TestReview8CloseDuringSends: Close while Run has hundreds of sends
// waiting (a misuse: Close's doc asks for Run to have returned). Run
// returns ErrClosed, nothing panics, and once the file is opened again
// and drained, every message went at most once, and each item is
// accepted (sent) or submitted_unknown (its outcome not recorded before
// Close) or sent by the second Run.
func TestReview8CloseDuringSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		o, dsn := openSQLite(t, outbox.WithLease(3*time.Second))
		c := slowClient(t, meta, time.Second)
		keys := enqueueReview8(t, o, 600)
		errc := make(chan error, 1)
		go func() { errc <- o.Run(t.Context(), c) }()
		time.Sleep(3 * time.Second)
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; !errors.Is(err, outbox.ErrClosed) {
			t.Errorf("Run after Close: %v, want ErrClosed", err)
		}
		o2, err := outbox.Open(t.Context(), dsn, outbox.WithLease(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer o2.Close()
		runFor(t, o2, newClient(t, meta), 5*time.Minute)
		got := receivedBy(meta)
		states := map[outbox.State]int{}
		unsent := 0
		for _, k := range keys {
			it := mustGet(t, o2, k)
			states[it.State]++
			if it.State == outbox.StateSubmittedUnknown && got[k] == 0 {
				unsent++
			}
			switch {
			case got[k] > 1:
				t.Errorf("%s sent %d times", k, got[k])
			case it.State == outbox.StateAccepted && got[k] == 0:
				t.Errorf("%s accepted, never sent", k)
			case it.State != outbox.StateAccepted && it.State != outbox.StateSubmittedUnknown:
				t.Errorf("%s: %v (%s)", k, it.State, it.Reason)
			}
		}
		t.Logf("states %v (%d unknown never sent)", states, unsent)
	})
}

// TestReview8SpinsOnAnotherWorkersEndedLease: a worker whose sends fill
// what it wants in flight, while another worker's claim has passed its
// lease, never sleeps: nextWake returns that lease's end (already past),
// wait returns at once (d <= 0), and step neither claims nor sweeps
// (sweeps run inside claim, skipped while free <= 0), so the loop runs
// nextWake's query again and again at the same instant until one of its
// own sends ends. On the real clock that is 100 % of a core (and the
// SQLite lock) for up to a round trip to Meta, each time a worker dies or
// stalls; on a simulated clock (synctest, simclock), time never advances
// and the simulation hangs. Review 8 met it as a hang: a second worker
// started while the first, stopping, no longer renewed its leases.
//
// Here: one claim held by a "dead" worker, its lease ending 2 s in; a
// worker B with 500 items and Meta answering 5 s late, so that none of
// B's sends ends before 5 s. The bubble must reach 10 s (a watchdog on
// the real clock ends the test binary after 30 s if it does not).
//
// At fault: outbox/run.go wait()/step() (a past wake-up with nothing to
// do: the sweep should run, or the wait should skip instants already
// handled).
func TestReview8SpinsOnAnotherWorkersEndedLease(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		synctest.Test(t, spinScenario)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		panic("review8: Run spins on another worker's ended lease (30 s of real time, the bubble's clock stuck at 2 s)")
	}
}

// spinScenario is the bubble of TestReview8SpinsOnAnotherWorkersEndedLease.
func spinScenario(t *testing.T) {
	meta := cloudapitest.NewServer(t)
	o, _ := openSQLite(t)
	enqueueReview8(t, o, 500)
	if _, err := o.DB().ExecContext(t.Context(), `UPDATE outbox_items SET state = 'sending', owner = 'dead-worker',
		lease_until = ?, state_at = ? WHERE ikey = 'k0'`, time.Now().Add(2*time.Second).UnixNano(), time.Now().UnixNano()); err != nil {
		t.Fatal(err)
	}
	runFor(t, o, slowClient(t, meta, 5*time.Second), 10*time.Second)
	if it := mustGet(t, o, "k0"); it.State != outbox.StateSubmittedUnknown {
		t.Errorf("the dead claim: %v (%s)", it.State, it.Reason)
	}
}
