package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// Review 8's findings in Run (wave 3, session 6), fixed: each test failed
// before its fix.

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

// TestStopGraceKeepsLeases: Run lets the sends in flight go on for the
// stop grace (default 5 s) once its context ends, and keeps renewing
// their leases meanwhile. Review 8 found it stopped renewing: with a
// lease of 600 ms and Meta answering in 1 s (Run then keeps ~125 sends in
// flight, their slots 1.5 s deep at 80 msg/s), the fence closed during
// the grace and refused every send still waiting for its slot, each
// recorded as a failed submission (requeued a minute later, its attempt
// counted). Now an item claimed and never sent is queued again at once,
// uncounted, "run stopped before the request was written"; and a fence
// refusal is never counted as an attempt (its request was not written).
func TestStopGraceKeepsLeases(t *testing.T) {
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

// TestIdempotencyMemoryFullRequeuesUncounted: Run keeps up to
// WithConcurrency sends in flight, whatever the Client's idempotency
// memory holds. A send the Client refuses with ErrIdempotencyMemoryFull
// (nothing sent) goes back to its lane's head, its attempt uncounted, as
// one refused with ErrInProgress does. Review 8 found such refusals
// counted as failed submissions: after 10 of them a message failed for
// good although Meta never saw it. Here: 60 messages, one number at 80
// msg/s, Meta answering 200 ms late, a Client remembering 4 keys: all 60
// accepted within 30 simulated minutes, none twice. Most items bounce
// more than once: each item's history holds one row for its bounces,
// which counts them (before, two rows a bounce: up to 13 rows).
func TestIdempotencyMemoryFullRequeuesUncounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		o, _ := openSQLite(t)
		c := slowClient(t, meta, 200*time.Millisecond, cloudapi.WithIdempotencyMemory(4, time.Hour))
		keys := enqueueReview8(t, o, 60)
		runFor(t, o, c, 30*time.Minute)
		got := receivedBy(meta)
		states := map[outbox.State]int{}
		var example outbox.Item
		counted := 0
		for _, k := range keys {
			it := mustGet(t, o, k)
			states[it.State]++
			if it.State != outbox.StateAccepted {
				example = it
			}
			if got[k] > 1 {
				t.Errorf("%s sent %d times", k, got[k])
			}
			full := 0
			var rows []string
			for _, h := range it.History {
				rows = append(rows, h.State.String()+" "+h.Reason)
				if strings.Contains(h.Reason, "memory full") {
					full++
				}
				if strings.Contains(h.Reason, "times)") {
					counted++
				}
			}
			// queued, sending, queued (memory full, n times), sending,
			// accepted.
			if full > 1 || len(it.History) > 5 {
				t.Errorf("%s: history of %d rows (%d of them memory full), want at most 5 (1):\n%s",
					k, len(it.History), full, strings.Join(rows, "\n"))
			}
		}
		if states[outbox.StateAccepted] != len(keys) {
			t.Errorf("after 30 min: %v; e.g. %s: %v, attempts %d, %q", states, example.Key, example.State, example.Attempts, example.Reason)
		}
		if counted == 0 {
			t.Errorf("no item bounced twice: the history's bound is not tested")
		}
	})
}

// TestRunSweepsWithEverySlotTaken: a worker whose sends fill what it
// wants in flight still sweeps when another worker's lease ends. Review 8
// found it spinning instead: nextWake returned the past lease end, wait
// returned at once, and step neither claimed nor swept (sweeps ran only
// inside a claim, skipped with no slot free), until one of its own sends
// ended: a core on the real clock, a hang on a simulated one. Here: one
// claim held by a dead worker, its lease ending 2 s in; a worker with 500
// items and Meta answering 5 s late, so that none of its sends ends
// before 5 s. The bubble must reach 10 s and the dead claim become
// unknown (a watchdog on the real clock ends the test binary after 30 s).
func TestRunSweepsWithEverySlotTaken(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		synctest.Test(t, spinScenario)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		panic("outbox: Run spins on another worker's ended lease (30 s of real time, the bubble's clock stuck at 2 s)")
	}
}

// spinScenario is the bubble of TestRunSweepsWithEverySlotTaken.
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
