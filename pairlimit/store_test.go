package pairlimit_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

// wrapped hides a MemoryStore behind the interface, so that the limiter
// takes its generic path.
type wrapped struct{ pairstore.Store }

// broken fails every decision.
type broken struct{}

var errDown = errors.New("connection refused")

func (broken) Reserve(context.Context, pairstore.Pair, time.Time, time.Duration, time.Duration) (pairstore.Ticket, bool, error) {
	return pairstore.Ticket{}, false, errDown
}
func (broken) Next(context.Context, pairstore.Pair, time.Time) (time.Time, error) {
	return time.Time{}, errDown
}
func (broken) Cancel(context.Context, pairstore.Pair, time.Time, pairstore.Ticket) (bool, error) {
	return false, errDown
}
func (broken) Refuse(context.Context, pairstore.Pair, time.Time, []time.Duration, time.Duration) (time.Duration, error) {
	return 0, errDown
}
func (broken) Accept(context.Context, pairstore.Pair, time.Time) error { return errDown }

func TestStoreErrorsAreTyped(t *testing.T) {
	t.Parallel()
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(broken{}))
	p := mustPair(t, "1001", "237690000001")
	r := lim.ReserveN(t0, p, 1)
	if r.OK() || !errors.Is(r.Err(), pairlimit.ErrStore) || !errors.Is(r.Err(), errDown) {
		t.Fatalf("reservation on a broken store: OK %v, Err %v", r.OK(), r.Err())
	}
	if lim.AllowN(t0, p, 1) {
		t.Error("AllowN true on a broken store")
	}
	if _, err := lim.ReadyAt(t0, p, 1); !errors.Is(err, pairlimit.ErrStore) {
		t.Errorf("ReadyAt: %v", err)
	}
	if d := lim.Refused(t0, p); d != 0 {
		t.Errorf("Refused on a broken store = %v, want 0: no hold was recorded", d)
	}
	if err := lim.Wait(t.Context(), p); !errors.Is(err, pairlimit.ErrStore) {
		t.Errorf("Wait: %v", err)
	}
	// That the error names the decision: TestStoreErrorNamesTheDecision
	// (internal, the type being unexported).
}

// Two limiters sharing one store pace a pair as one, through the interface
// or the built-in path alike.
func TestSharedStorePacesAsOne(t *testing.T) {
	t.Parallel()
	for _, shared := range []pairstore.Store{pairlimit.NewMemoryStore(nil), wrapped{pairlimit.NewMemoryStore(nil)}} {
		a := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(shared), pairlimit.WithMargin(0))
		b := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(shared), pairlimit.WithMargin(0))
		p := mustPair(t, "1001", "237690000001")
		a.ReserveN(t0, p, 2)
		r := b.ReserveN(t0, p, 1)
		if got := r.TimeToAct().Sub(t0); got != 12*time.Second {
			t.Errorf("%T: second limiter acts at +%v, want +12s", shared, got)
		}
		if at, err := a.ReadyAt(t0, p, 1); err != nil || at.Sub(t0) != 18*time.Second {
			t.Errorf("%T: ReadyAt = +%v, %v", shared, at.Sub(t0), err)
		}
		r.CancelAt(t0)
		if at, _ := b.ReadyAt(t0, p, 1); at.Sub(t0) != 12*time.Second {
			t.Errorf("%T: after give-back ReadyAt = +%v, want +12s", shared, at.Sub(t0))
		}
		if h := b.Refused(t0, p); h != time.Second {
			t.Errorf("%T: hold %v", shared, h)
		}
		if h := a.Refused(t0, p); h != 4*time.Second {
			t.Errorf("%T: second hold %v, want 4s: the count is shared", shared, h)
		}
	}
}

func TestReadyAtChangesNothing(t *testing.T) {
	t.Parallel()
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
	p := mustPair(t, "1001", "237690000001")
	if at, err := lim.ReadyAt(t0, p, 1); err != nil || !at.Equal(t0) {
		t.Fatalf("ReadyAt on a fresh pair = %v, %v", at, err)
	}
	lim.ReserveN(t0, p, 3)
	for range 3 {
		if at, _ := lim.ReadyAt(t0.Add(time.Second), p, 2); at.Sub(t0) != 18*time.Second {
			t.Fatalf("ReadyAt = +%v, want +18s", at.Sub(t0))
		}
	}
	if at, _ := lim.ReadyAt(t0.Add(time.Minute), p, 1); !at.Equal(t0.Add(time.Minute)) {
		t.Errorf("ReadyAt after the debt = %v", at)
	}
	if got := lim.ReserveN(t0, p, 1).TimeToAct().Sub(t0); got != 18*time.Second {
		t.Errorf("after queries the pair acts at +%v, want +18s", got)
	}
	for _, tt := range []struct {
		n    int
		p    pairlimit.Pair
		want error
	}{{0, p, pairlimit.ErrInvalidCount}, {46, p, pairlimit.ErrBurstTooLarge}, {1, pairlimit.Pair{}, pairlimit.ErrZeroPair}} {
		if _, err := lim.ReadyAt(t0, tt.p, tt.n); !errors.Is(err, tt.want) {
			t.Errorf("ReadyAt(n=%d) = %v, want %v", tt.n, err, tt.want)
		}
	}
}

// A wait that cannot fit before the deadline reserves nothing.
func TestWaitPastDeadlineReservesNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
		p := mustPair(t, "1001", "237690000001")
		now := time.Now()
		lim.ReserveN(now, p, 1)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := lim.Wait(ctx, p); !errors.Is(err, backoff.ErrDeadline) {
			t.Fatalf("Wait = %v", err)
		}
		if at, _ := lim.ReadyAt(now, p, 1); at.Sub(now) != 6*time.Second {
			t.Errorf("the failed wait left the pair ready at +%v, want +6s", at.Sub(now))
		}
	})
}
