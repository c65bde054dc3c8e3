package redisstore_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wapace/wapace/internal/redisserver"
	"github.com/wapace/wapace/internal/redistest"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/redisstore"
)

// lossWorld is one Redis server of the test's own (its state is lost on
// purpose) and several Stores over it, each with a client of its own, as
// separate processes have.
type lossWorld struct {
	srv    *redisserver.Server
	stores []*redisstore.Store
	rdb    *redis.Client

	mu     sync.Mutex
	events [][]redisstore.StateLoss // per store
}

func newLossWorld(t *testing.T, n int) *lossWorld {
	t.Helper()
	w := &lossWorld{srv: redistest.Start(t), events: make([][]redisstore.StateLoss, n)}
	prefix := redistest.Prefix(t)
	client := func() *redis.Client {
		opt, _ := redis.ParseURL(w.srv.URL)
		c := redis.NewClient(opt)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	w.rdb = client()
	for i := range n {
		w.stores = append(w.stores, redisstore.New(client(), redisstore.WithPrefix(prefix),
			redisstore.WithObserver(func(ev redisstore.StateLoss) {
				w.mu.Lock()
				w.events[i] = append(w.events[i], ev)
				w.mu.Unlock()
			})))
	}
	return w
}

func (w *lossWorld) eventsOf(i int) []redisstore.StateLoss {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]redisstore.StateLoss(nil), w.events[i]...)
}

// Redis loses its state while pairs owe (FLUSHALL, or a restart without
// persistence): the process that created a debt never undercuts it, and
// once a loss is noticed every process treats a pair Redis no longer holds
// as owing until the lost-state debt has passed since; a lost throughput
// bucket does not double a second's count. Every process reports the loss
// once. Before the fix the first pair's next message went at +11 s.
func TestStateLossKeepsDebts(t *testing.T) {
	for _, how := range []string{"FLUSHALL", "restart without persistence"} {
		t.Run(how, func(t *testing.T) {
			w := newLossWorld(t, 3)
			a, b, c := w.stores[0], w.stores[1], w.stores[2]
			limA := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(a))
			limB := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(b))
			limC := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(c))
			const num = "106540352242922"
			burst, _ := pairlimit.NewPair(num, "237690000001")  // A's full burst
			single, _ := pairlimit.NewPair(num, "237690000002") // B's one message
			unseen, _ := pairlimit.NewPair(num, "237690000003") // nobody's yet
			t0 := time.Now()
			if r := limA.ReserveN(t0, burst, 45); !r.OK() || !r.TimeToAct().Equal(t0) {
				t.Fatalf("the burst: %v at %v", r.Err(), r.TimeToAct())
			}
			if r := limB.ReserveN(t0, single, 1); !r.OK() {
				t.Fatal(r.Err())
			}
			// C has made a decision for the number too (it knows the marker).
			if r := limC.ReserveN(t0, mustPairT(t, num, "237690000009"), 1); !r.OK() {
				t.Fatal(r.Err())
			}
			// The number's throughput bucket, spent by A: 80 messages at t0.
			thA, thB := a.Throughput(), b.Throughput()
			if _, ok, err := thA.Reserve(t.Context(), num, t0, 80, time.Second/80, 80, time.Duration(math.MaxInt64)); !ok || err != nil {
				t.Fatal(ok, err)
			}

			switch how {
			case "FLUSHALL":
				if err := w.rdb.FlushAll(t.Context()).Err(); err != nil {
					t.Fatal(err)
				}
			default:
				if err := w.srv.Restart(t.Context()); err != nil {
					t.Fatal(err)
				}
			}

			// A, the creator of the burst's debt, does not undercut it.
			at := t0.Add(11 * time.Second)
			want := t0.Add(45*pairlimit.Meta.Interval + pairlimit.DefaultMargin)
			var r pairlimit.Reservation
			for range 50 { // a restarted server may take a moment to accept connections
				if r = limA.ReserveN(at, burst, 1); r.OK() {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if !r.OK() || r.TimeToAct().Before(want) {
				t.Fatalf("A's next message to the burst's pair acts at +%v (%v), want at least +%v",
					r.TimeToAct().Sub(t0), r.Err(), want.Sub(t0))
			}
			// That decision noticed the loss: B, which never saw the burst,
			// now treats a pair Redis does not hold as owing until the
			// lost-state debt has passed since the loss was noticed.
			notice := at
			quarantine := notice.Add(redisstore.DefaultLostStateDebt)
			if r := limB.ReserveN(t0.Add(12*time.Second), unseen, 1); !r.OK() || r.TimeToAct().Before(quarantine) {
				t.Errorf("B's first message to a pair Redis no longer holds acts at +%v (%v), want at least +%v",
					r.TimeToAct().Sub(t0), r.Err(), quarantine.Sub(t0))
			}
			// The burst's pair, seen through C now: Redis holds A's restored debt.
			if got, err := limC.ReadyAt(t0.Add(13*time.Second), burst, 1); err != nil || got.Before(want) {
				t.Errorf("C sees the burst's pair ready at +%v (%v), want at least +%v", got.Sub(t0), err, want.Sub(t0))
			}
			// B's own pair: its own debt is kept by B (and the quarantine).
			if r := limB.ReserveN(t0.Add(time.Second), single, 1); !r.OK() || r.TimeToAct().Before(t0.Add(6250*time.Millisecond)) {
				t.Errorf("B's own pair acts at +%v (%v), want at least +6.25s", r.TimeToAct().Sub(t0), r.Err())
			}
			// The lost bucket starts spent: 80 more in the same second would
			// double the second's count.
			tk, ok, err := thB.Reserve(t.Context(), num, t0.Add(100*time.Millisecond), 80, time.Second/80, 80, time.Duration(math.MaxInt64))
			if err != nil || !ok || time.Unix(0, tk.Act).Before(t0.Add(time.Second)) {
				t.Errorf("80 more messages after the loss act at +%v (%v %v), want a second after the first 80",
					time.Unix(0, tk.Act).Sub(t0), ok, err)
			}
			// C learns of the loss on its next reservation; its own pair
			// keeps C's debt.
			if r := limC.ReserveN(t0.Add(2*time.Second), mustPairT(t, num, "237690000009"), 1); !r.OK() || r.TimeToAct().Before(t0.Add(6250*time.Millisecond)) {
				t.Errorf("C's own pair acts at +%v (%v), want at least +6.25s", r.TimeToAct().Sub(t0), r.Err())
			}
			// Each process reports the loss once.
			for i := range w.stores {
				ev := w.eventsOf(i)
				if len(ev) != 1 || ev[0].Key != num || !ev[0].Until.Equal(ev[0].Since.Add(redisstore.DefaultLostStateDebt)) {
					t.Errorf("store %d reported %+v, want one loss of %s", i, ev, num)
				}
			}
		})
	}
}

// A Redis used for the first time is not a loss: no quarantine, nothing
// reported.
func TestFirstUseIsNoLoss(t *testing.T) {
	w := newLossWorld(t, 2)
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(w.stores[0]))
	other := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(w.stores[1]))
	t0 := time.Now()
	for i, l := range []*pairlimit.Limiter{lim, other, lim} {
		p := mustPairT(t, "106540352242922", "23769000000"+string(rune('1'+i)))
		if r := l.ReserveN(t0, p, 1); !r.OK() || !r.TimeToAct().Equal(t0) {
			t.Errorf("reservation %d acts at +%v (%v), want at once", i, r.TimeToAct().Sub(t0), r.Err())
		}
	}
	for i := range w.stores {
		if ev := w.eventsOf(i); len(ev) != 0 {
			t.Errorf("store %d reported %+v", i, ev)
		}
	}
}

func mustPairT(t *testing.T, from, to string) pairlimit.Pair {
	t.Helper()
	p, err := pairlimit.NewPair(from, to)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
