package cloudapi_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
)

// TestFullMemoryKeepsKeysInFlight: a Client whose idempotency memory is
// full dropped its oldest key even while that key's send was in flight,
// so a retry of it was sent a second time. With room for one key: the
// send of "k2" waits 6 s for its pair (alice got "k1" just before); a send
// with another key meanwhile finds only a key in flight to forget, so it
// fails at once with ErrIdempotencyMemoryFull, sending nothing; a retry
// of "k2" while it is in flight is refused with ErrInProgress; "k2" is
// sent once.
func TestFullMemoryKeepsKeysInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, cloudapi.WithIdempotencyMemory(1, time.Hour))
		if _, err := h.c.Send(t.Context(), number, withKey(cloudapi.Text(alice, "one"), "k1")); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := h.c.Send(t.Context(), number, withKey(cloudapi.Text(alice, "two"), "k2"))
			done <- err
		}()
		synctest.Wait() // k2 claimed, waiting for alice's pair
		before := len(h.srv.Requests())
		_, err := h.c.Send(t.Context(), number, withKey(cloudapi.Text(bob, "three"), "k3"))
		if !errors.Is(err, cloudapi.ErrIdempotencyMemoryFull) || cloudapi.StateOf(err) != cloudapi.StateNotSubmitted {
			t.Errorf("k3 with the memory full of sends in flight: %v (%v), want ErrIdempotencyMemoryFull, not submitted", err, cloudapi.StateOf(err))
		}
		if n := len(h.srv.Requests()) - before; n != 0 {
			t.Errorf("k3: %d requests", n)
		}
		if _, err := h.c.Send(t.Context(), number, withKey(cloudapi.Text(alice, "two"), "k2")); !errors.Is(err, cloudapi.ErrInProgress) {
			t.Errorf("k2 again while in flight: %v, want ErrInProgress", err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		sent := 0
		for _, r := range h.srv.Requests() {
			if r.CallbackData == "k2" {
				sent++
			}
		}
		if sent != 1 {
			t.Errorf("k2 sent %d times", sent)
		}
		// The memory has room again: k3 goes.
		if _, err := h.c.Send(t.Context(), number, withKey(cloudapi.Text(bob, "three"), "k3")); err != nil {
			t.Errorf("k3 once k2 ended: %v", err)
		}
	})
}
