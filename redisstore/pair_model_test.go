package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/internal/redistest"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newTestStore(t *testing.T) *Store {
	t.Helper()
	return New(redistest.Client(t), WithPrefix(redistest.Prefix(t)))
}

// Every pair script applies exactly the pure pairstore.State method its
// Store method names: random calls at past, present and future instants
// leave Redis holding the State the Go model computes, and answer alike.
func TestPairScriptsApplyTheStateModel(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	holds := []time.Duration{time.Second, 4 * time.Second, 16 * time.Second}
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 99))
		p, _ := pairlimit.NewPair("106540352242922", "2376900000"+string(rune('1'+seed))+"1")
		var model pairstore.State
		var tickets []pairstore.Ticket
		now := t0.Add(time.Duration(rng.Int64N(1e9)))
		for step := range 300 {
			now = now.Add(time.Duration(rng.Int64N(int64(4*time.Second))) - time.Second)
			if rng.IntN(40) == 0 {
				now = now.Add(36 * time.Hour) // the base moves after a day
			}
			at := now.Add(time.Duration(rng.Int64N(int64(10*time.Second))) - 2*time.Second)
			var op string
			switch k := rng.IntN(10); {
			case k < 5:
				op = "reserve"
				cost := time.Duration(1+rng.IntN(3))*6*time.Second + 250*time.Millisecond
				maxWait := pairlimit.InfDuration
				if rng.IntN(3) == 0 {
					maxWait = time.Duration(rng.Int64N(int64(10 * time.Second)))
				}
				tk, ok, err := s.Reserve(ctx, p, at, cost, maxWait)
				if err != nil {
					t.Fatal(err)
				}
				wantAct := model.Next(at.UnixNano())
				wantOK := wantAct <= at.UnixNano()+int64(maxWait) || maxWait == pairlimit.InfDuration
				if ok != wantOK || tk.Act != wantAct {
					t.Fatalf("seed %d step %d: Reserve = %v %d, model %v %d", seed, step, ok, tk.Act, wantOK, wantAct)
				}
				if ok {
					var mt pairstore.Ticket
					model, mt = model.Reserve(at.UnixNano(), cost, tk.ID)
					if diff := cmp.Diff(mt, tk); diff != "" {
						t.Fatalf("seed %d step %d: ticket (-model +redis):\n%s", seed, step, diff)
					}
					tickets = append(tickets, tk)
				}
			case k < 7 && len(tickets) > 0:
				op = "cancel"
				tk := tickets[rng.IntN(len(tickets))]
				got, err := s.Cancel(ctx, p, at, tk)
				if err != nil {
					t.Fatal(err)
				}
				var want bool
				model, want = model.Cancel(tk, at.UnixNano())
				if got != want {
					t.Fatalf("seed %d step %d: Cancel = %v, model %v", seed, step, got, want)
				}
			case k < 8:
				op = "refuse"
				got, err := s.Refuse(ctx, p, at, holds, 15*time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				var want time.Duration
				model, want = model.Refuse(at.UnixNano(), holds)
				if got != want {
					t.Fatalf("seed %d step %d: Refuse = %v, model %v", seed, step, got, want)
				}
			case k < 9:
				op = "accept"
				if err := s.Accept(ctx, p, at); err != nil {
					t.Fatal(err)
				}
				model = model.Accept()
			default:
				op = "next"
				got, err := s.Next(ctx, p, at)
				if err != nil {
					t.Fatal(err)
				}
				if want := model.Next(at.UnixNano()); got.UnixNano() != want {
					t.Fatalf("seed %d step %d: Next = %d, model %d", seed, step, got.UnixNano(), want)
				}
			}
			model = checkPairState(t, s, p, at, model, fmt.Sprintf("seed %d step %d after %s", seed, step, op))
		}
	}
}

// checkPairState requires the state Redis holds for p at instant at to be
// model, and returns the model to carry on with. A key with under 10 s to
// live is dropped first, as State.Expired allows (under 10 s of life a
// state is expired; keys outlive that by SkewAllowance, a minute), so that
// the next step does not race its expiry: on simulated time the expiry is
// relative, and a key left 1 ms (seed 1's Accept at step 137, long after
// its last 131056) was found gone by the next Reserve once in about ten
// -race runs on a loaded machine. A state Redis forgot must be expired.
func checkPairState(t *testing.T, s *Store, p pairlimit.Pair, at time.Time, model pairstore.State, where string) pairstore.State {
	t.Helper()
	ctx := context.Background()
	if ttl, err := s.rdb.PTTL(ctx, s.pairKey(p)).Result(); err != nil {
		t.Fatal(err)
	} else if ttl > 0 && ttl < 10*time.Second {
		if !model.Expired(at.UnixNano(), 15*time.Minute) {
			t.Fatalf("%s: the key expires in %v but the state is live", where, ttl)
		}
		if err := s.rdb.Del(ctx, s.pairKey(p)).Err(); err != nil {
			t.Fatal(err)
		}
		model = pairstore.State{}
	}
	got, err := s.pairStateOf(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got == (pairstore.State{}) && model.Expired(at.UnixNano(), 15*time.Minute) {
		model = got // forgotten, as State.Expired allows
	}
	if diff := cmp.Diff(model, got); diff != "" {
		t.Fatalf("%s: state (-model +redis):\n%s", where, diff)
	}
	return model
}
