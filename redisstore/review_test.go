package redisstore

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wapace/wapace/internal/redistest"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
	"github.com/wapace/wapace/throughput"
)

type countHook struct{ n atomic.Int64 }

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}

// Every decision is one round trip once the scripts are loaded.
func TestOneRoundTripPerDecision(t *testing.T) {
	rdb := redistest.Client(t)
	h := &countHook{}
	rdb.AddHook(h)
	s := New(rdb, WithPrefix(redistest.Prefix(t)))
	ctx := t.Context()
	p, _ := pairlimit.NewPair("106540352242922", "237690000001")
	th := s.Throughput()
	do := func() {
		tk, _, _ := s.Reserve(ctx, p, t0, time.Second, pairlimit.InfDuration)
		_, _ = s.Next(ctx, p, t0)
		_, _ = s.Cancel(ctx, p, t0, tk)
		_, _ = s.Refuse(ctx, p, t0, []time.Duration{time.Second}, time.Minute)
		_ = s.Accept(ctx, p, t0)
		btk, _, _ := th.Reserve(ctx, "n", t0, 1, time.Millisecond, 1, time.Duration(math.MaxInt64))
		_, _ = th.Cancel(ctx, "n", t0, btk)
		_, _ = th.Hold(ctx, "n", t0)
		ctk, _, _, _ := th.Claim(ctx, "t", 1, t0, 5, time.Hour)
		_, _ = th.Release(ctx, "t", ctk)
		_, _ = th.Count(ctx, "t", t0, time.Hour)
	}
	do() // loads the scripts
	h.n.Store(0)
	do()
	if got := h.n.Load(); got != 11 {
		t.Fatalf("11 decisions took %d round trips", got)
	}
}

// A server that accepts and never answers: every decision fails, typed,
// within WithTimeout, on a client with ContextTimeoutEnabled. (Without
// it, go-redis ignores the context's deadline: each decision took 5 s, the
// client's ReadTimeout, which WithTimeout's documentation did not say.)
func TestHungServerFailsClosedWithinTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	// A read timeout far beyond the bound checked below: ignoring the
	// context's deadline takes a minute, and a loaded machine's delays
	// cannot pass for that.
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, ContextTimeoutEnabled: true, ReadTimeout: time.Minute})
	defer rdb.Close()
	s := New(rdb, WithTimeout(150*time.Millisecond))
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(s))
	p, _ := pairlimit.NewPair("106540352242922", "237690000001")
	start := time.Now()
	r := lim.ReserveN(t0, p, 1)
	if r.OK() || !errors.Is(r.Err(), pairlimit.ErrStore) || !errors.Is(r.Err(), ErrUnavailable) {
		t.Fatalf("OK %v err %v", r.OK(), r.Err())
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %v", d)
	}
	tl := throughput.New(80, throughput.WithStore(s.Throughput(), "n"))
	if r := tl.ReserveN(t0, 1); r.OK() || !errors.Is(r.Err(), throughput.ErrStore) {
		t.Fatalf("throughput: OK %v err %v", r.OK(), r.Err())
	}
	tier := throughput.NewTier(10, throughput.WithStore(s.Throughput(), "t"))
	if c := tier.Claim(t0, "237690000001"); c.OK() || !errors.Is(c.Err(), throughput.ErrStore) {
		t.Fatalf("tier: OK %v err %v", c.OK(), c.Err())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := lim.WaitN(ctx, p, 1); !errors.Is(err, pairlimit.ErrStore) {
		t.Fatalf("WaitN = %v", err)
	}
}

// Instants far apart give the model's answers: exactly among instants
// within 100 days of each other (Lua's doubles hold 104 days of
// nanoseconds around the base, which moves to each call's instant), within
// a few microseconds across centuries, and never an act before the instant
// asked. (An offset from a base 200 years away answered an act 90 ns before
// the instant asked and a hold 223 ns off.)
func TestFarInstantsMatchModel(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	holds := []time.Duration{time.Second, 4 * time.Second}
	wide := []time.Time{time.Unix(1, 0), t0, t0.Add(-400 * 24 * time.Hour), t0.Add(200 * 365 * 24 * time.Hour), time.Unix(0, 1<<62), t0.Add(time.Second)}
	narrow := []time.Time{t0, t0.Add(-50 * 24 * time.Hour), t0.Add(50 * 24 * time.Hour), t0.Add(36 * time.Hour)}
	for seed := range uint64(20) {
		instants, slack := narrow, int64(0)
		if seed%2 == 1 {
			instants, slack = wide, 10_000
		}
		near := func(got, want int64, at time.Time) bool {
			return got >= at.UnixNano() && got-want <= slack && want-got <= slack
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		p, _ := pairlimit.NewPair("106540352242923", "23769000"+string(rune('0'+seed%10))+string(rune('0'+seed/10))+"01")
		var model pairstore.State
		var tks []pairstore.Ticket
		for step := range 30 {
			at := instants[rng.IntN(len(instants))].Add(time.Duration(rng.Int64N(int64(20 * time.Second))))
			switch rng.IntN(4) {
			case 0, 1:
				cost := time.Duration(1+rng.IntN(3)) * 6 * time.Second
				tk, ok, err := s.Reserve(ctx, p, at, cost, pairlimit.InfDuration)
				if err != nil || !ok {
					t.Fatal(ok, err)
				}
				if want := model.Next(at.UnixNano()); !near(tk.Act, want, at) {
					t.Fatalf("seed %d step %d: act %d, model %d (at %v)", seed, step, tk.Act, want, at)
				}
				model, _ = model.Reserve(at.UnixNano(), cost, tk.ID)
				tks = append(tks, tk)
			case 2:
				got, err := s.Refuse(ctx, p, at, holds, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				var want time.Duration
				model, want = model.Refuse(at.UnixNano(), holds)
				if got != want {
					t.Fatalf("seed %d step %d: hold %v, model %v", seed, step, got, want)
				}
			case 3:
				if len(tks) == 0 || slack != 0 { // tickets across centuries are not exact
					continue
				}
				tk := tks[rng.IntN(len(tks))]
				got, err := s.Cancel(ctx, p, at, tk)
				if err != nil {
					t.Fatal(err)
				}
				var want bool
				model, want = model.Cancel(tk, at.UnixNano())
				if got != want {
					t.Fatalf("seed %d step %d: cancel %v, model %v", seed, step, got, want)
				}
			}
			got, err := s.Next(ctx, p, at)
			if err != nil {
				t.Fatal(err)
			}
			if want := model.Next(at.UnixNano()); !near(got.UnixNano(), want, at) {
				t.Fatalf("seed %d step %d: next %d, model %d (diff %d, at %v)", seed, step, got.UnixNano(), want, got.UnixNano()-want, at)
			}
		}
	}
}

// A refund (Cancel at 1970) gives back exactly, and leaves the state exact.
func TestRefundGivesBackExactly(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	p, _ := pairlimit.NewPair("106540352242924", "237690000001")
	var model pairstore.State
	tk1, _, _ := s.Reserve(ctx, p, t0, 6250*time.Millisecond, pairlimit.InfDuration)
	model, _ = model.Reserve(t0.UnixNano(), 6250*time.Millisecond, tk1.ID)
	tk2, _, _ := s.Reserve(ctx, p, t0, 12250*time.Millisecond, pairlimit.InfDuration)
	model, _ = model.Reserve(t0.UnixNano(), 12250*time.Millisecond, tk2.ID)
	ok, err := s.Cancel(ctx, p, time.Unix(0, math.MinInt64), tk2)
	model, want := model.Cancel(tk2, math.MinInt64)
	if err != nil || ok != want || !ok {
		t.Fatalf("refund = %v %v, model %v", ok, err, want)
	}
	st, err := s.pairStateOf(ctx, p)
	if err != nil || st != model {
		t.Fatalf("state %+v %v, model %+v", st, err, model)
	}
}

// A key whose base lies centuries from the call's instant still decides
// exactly: a far reservation given back leaves the key (and its base), and
// a 131056 200 days after the base holds exactly. (Both were off by tens
// to hundreds of nanoseconds, the first with an act before the instant
// asked.)
func TestBaseFarFromCallDecidesExactly(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	p, _ := pairlimit.NewPair("106540352242925", "237690000001")
	far := t0.Add(200 * 365 * 24 * time.Hour)
	tk, _, _ := s.Reserve(ctx, p, far, 6*time.Second, pairlimit.InfDuration)
	if ok, err := s.Cancel(ctx, p, far, tk); !ok || err != nil {
		t.Fatalf("cancel %v %v", ok, err)
	}
	at := t0.Add(123456789)
	tk, ok, err := s.Reserve(ctx, p, at, 6*time.Second, pairlimit.InfDuration)
	if err != nil || !ok || tk.Act != at.UnixNano() {
		t.Fatalf("act %d, want %d (diff %d)", tk.Act, at.UnixNano(), tk.Act-at.UnixNano())
	}
	q, _ := pairlimit.NewPair("106540352242925", "237690000002")
	if _, _, err := s.Reserve(ctx, q, at, 6*time.Second, pairlimit.InfDuration); err != nil {
		t.Fatal(err)
	}
	later := at.Add(200 * 24 * time.Hour)
	if _, err := s.Refuse(ctx, q, later, []time.Duration{time.Second}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Next(ctx, q, later); err != nil || !got.Equal(later.Add(time.Second)) {
		t.Fatalf("after a 131056: next %v (diff %v), want %v", got, got.Sub(later.Add(time.Second)), later.Add(time.Second))
	}
}

// The same for a number's bucket: a reservation far ahead given back leaves
// the key and its base; a reservation now acts exactly now.
func TestBucketBaseFarFromCallDecidesExactly(t *testing.T) {
	th := newTestStore(t).Throughput()
	ctx := t.Context()
	far := t0.Add(200 * 365 * 24 * time.Hour)
	tk, ok, err := th.Reserve(ctx, "n", far, 1, time.Millisecond, 1, time.Duration(math.MaxInt64))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, err := th.Cancel(ctx, "n", far, tk); !ok || err != nil {
		t.Fatalf("cancel %v %v", ok, err)
	}
	at := t0.Add(123456789)
	tk, ok, err = th.Reserve(ctx, "n", at, 1, time.Millisecond, 1, time.Duration(math.MaxInt64))
	if err != nil || !ok || tk.Act != at.UnixNano() {
		t.Fatalf("act %d, want %d (diff %d)", tk.Act, at.UnixNano(), tk.Act-at.UnixNano())
	}
}
