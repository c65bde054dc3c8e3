package redisstore

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wapace/wapace/internal/redistest"
	"github.com/wapace/wapace/pairlimit"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newTestStore(t *testing.T) *Store {
	t.Helper()
	return New(redistest.Client(t), WithPrefix(redistest.Prefix(t)))
}

// The pair script schedules exactly as the in-memory limiter does, and the
// schedule passes Meta's model.
func TestPairScriptMatchesLimiter(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	mem := pairlimit.New(pairlimit.Meta)
	p, _ := pairlimit.NewPair("106540352242922", "237690000001")
	rng := rand.New(rand.NewPCG(1, 2))
	now := t0.Add(123456789) // odd nanoseconds
	var sends []time.Time
	for i := range 200 {
		now = now.Add(time.Duration(rng.Int64N(int64(8 * time.Second))))
		n := 1 + rng.IntN(3)
		want := mem.ReserveN(now, p, n)
		got, err := s.reservePair(ctx, 106540352242922, 237690000001, now, n, 6*time.Second, pairlimit.DefaultMargin, false)
		if err != nil {
			t.Fatal(err)
		}
		if !got.ok || !got.act.Equal(want.TimeToAct()) {
			t.Fatalf("step %d: redis act %v ok %v, memory %v", i, got.act, got.ok, want.TimeToAct())
		}
		if i%7 == 3 { // give some back before their time
			ok, err := s.giveBackPair(ctx, 106540352242922, 237690000001, now, got, true)
			if err != nil {
				t.Fatal(err)
			}
			want.CancelAt(now)
			if !ok {
				t.Fatalf("step %d: give-back refused", i)
			}
			continue
		}
		for range n {
			sends = append(sends, got.act)
		}
	}
	for i, v := range pairlimit.Replay(pairlimit.Meta, sends) {
		if !v.Accepted {
			t.Fatalf("send %d at %v refused by the model", i, v.At)
		}
	}
}

func TestPairGiveBackOnlyWhenNothingDepends(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	a, _ := s.reservePair(ctx, 1, 2, t0, 1, 6*time.Second, 0, false)
	b, _ := s.reservePair(ctx, 1, 2, t0, 1, 6*time.Second, 0, false)
	if ok, _ := s.giveBackPair(ctx, 1, 2, t0, a, true); ok {
		t.Error("gave back a reservation a later one depends on")
	}
	if ok, _ := s.giveBackPair(ctx, 1, 2, t0, b, true); !ok {
		t.Error("could not give back the latest reservation")
	}
	if ok, _ := s.giveBackPair(ctx, 1, 2, t0, b, true); ok {
		t.Error("gave back the same reservation twice")
	}
	c, _ := s.reservePair(ctx, 1, 2, t0, 1, 6*time.Second, 0, false)
	if !c.act.Equal(t0.Add(6 * time.Second)) {
		t.Errorf("after give-back the next goes at %v, want +6s", c.act.Sub(t0))
	}
	hold, err := s.refusedPair(ctx, 1, 2, t0, []time.Duration{time.Second, 4 * time.Second})
	if err != nil || hold != time.Second {
		t.Fatalf("refused: %v %v", hold, err)
	}
	hold, _ = s.refusedPair(ctx, 1, 2, t0.Add(20*time.Second), []time.Duration{time.Second, 4 * time.Second})
	if hold != 4*time.Second {
		t.Errorf("second hold %v", hold)
	}
	if d, ok, _ := s.dueOfPair(ctx, 1, 2); !ok || !d.Equal(t0.Add(24*time.Second)) {
		t.Errorf("due %v %v", d, ok)
	}
	if err := s.acceptedPair(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	hold, _ = s.refusedPair(ctx, 1, 2, t0.Add(30*time.Second), []time.Duration{time.Second, 4 * time.Second})
	if hold != time.Second {
		t.Errorf("hold after Accepted %v, want the first again", hold)
	}
}
