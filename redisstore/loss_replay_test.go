package redisstore

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wapace/wapace/internal/redistest"
	"github.com/wapace/wapace/pairlimit"
)

// After a loss, the tickets of reservations lifted by the store's floor or
// by the loss's quarantine are the ones the script made: the Go side's
// replay of the lift matches Redis's state to the nanosecond, and the
// reservations give back exactly (to the floor, or to the quarantine).
func TestLiftedReservationsMatchRedis(t *testing.T) {
	srv := redistest.Start(t)
	opt, _ := redis.ParseURL(srv.URL)
	prefix := redistest.Prefix(t)
	newStore := func(opts ...Option) *Store {
		c := redis.NewClient(opt)
		t.Cleanup(func() { _ = c.Close() })
		return New(c, append(opts, WithPrefix(prefix))...)
	}
	// a's quarantine is short, so that its floor decides its own pair.
	a, b := newStore(WithLostStateDebt(time.Second)), newStore()
	ctx := t.Context()
	p, _ := pairlimit.NewPair("106540352242922", "237690000001")
	q, _ := pairlimit.NewPair("106540352242922", "237690000002")
	t0 := time.Now().Add(-123456789 * time.Nanosecond)
	cost := 45*6*time.Second + 250*time.Millisecond
	first, ok, err := a.Reserve(ctx, p, t0, cost, pairlimit.InfDuration)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, err := b.Reserve(ctx, q, t0, time.Second, pairlimit.InfDuration); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := a.rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	check := func(who string, s *Store, p pairlimit.Pair, at time.Time, wantAct int64) {
		t.Helper()
		tk, ok, err := s.Reserve(ctx, p, at, 6250*time.Millisecond, pairlimit.InfDuration)
		if err != nil || !ok {
			t.Fatal(who, ok, err)
		}
		if tk.Act != wantAct || tk.PrevDue != wantAct || tk.End != wantAct+6250e6 {
			t.Errorf("%s: ticket %+v, want to act at the lift %d", who, tk, wantAct)
		}
		st, err := s.pairStateOf(ctx, p)
		if err != nil || st.Due != tk.End || st.Top != tk.ID {
			t.Errorf("%s: Redis holds %+v (%v), the ticket says Due %d, Top %d", who, st, err, tk.End, tk.ID)
		}
		if back, err := s.Cancel(ctx, p, at, tk); err != nil || !back {
			t.Errorf("%s: give-back %v %v", who, back, err)
		}
		if st, _ := s.pairStateOf(ctx, p); st.Due != wantAct {
			t.Errorf("%s: after the give-back Redis owes until %d, want the lift %d", who, st.Due, wantAct)
		}
	}
	at := t0.Add(11*time.Second + 987654321)
	check("the creator's floor", a, p, at, first.End)
	// a's call noticed the loss and wrote the new marker at its instant.
	check("the quarantine", b, q, at.Add(time.Second), at.UnixNano()+int64(DefaultLostStateDebt))
}
