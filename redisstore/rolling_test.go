package redisstore

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
	"github.com/wapace/wapace/throughput/throughputstore"
)

var (
	oldPairReserve = redis.NewScript(oldPairReserveLua)
	oldPairCancel  = redis.NewScript(oldPairCancelLua)
	oldPairRefuse  = redis.NewScript(oldPairRefuseLua)
)

// oldReserve is b16edfb's Store.Reserve.
func (s *Store) oldReserve(t *testing.T, p pairlimit.Pair, at time.Time, cost, maxWait time.Duration) (pairstore.Ticket, bool) {
	t.Helper()
	wait := int64(-1)
	if maxWait < pairlimit.InfDuration {
		wait = int64(max(maxWait, 0))
	}
	sec, nsec := secNs(at.UnixNano())
	v, err := oldPairReserve.Run(t.Context(), s.rdb, s.pairKeys(p), sec, nsec, int64(max(cost, 0)), wait, keepArg(at)).Result()
	if err != nil {
		t.Fatal(err)
	}
	a := replyArray(v)
	base := replyInt(a, 1)*1e9 + replyInt(a, 2)
	tk := pairstore.Ticket{Act: base + replyInt(a, 3)}
	if replyInt(a, 0) != 1 {
		return tk, false
	}
	tk.ID, tk.PrevTop = replyUint(a, 4), replyUint(a, 5)
	tk.End = tk.Act + int64(max(cost, 0))
	if replyInt(a, 6) == 1 {
		tk.PrevDue = base + replyInt(a, 7)
	}
	return tk, true
}

// oldCancel is b16edfb's Store.Cancel.
func (s *Store) oldCancel(t *testing.T, p pairlimit.Pair, at time.Time, tk pairstore.Ticket) bool {
	t.Helper()
	if tk.ID == 0 {
		return false
	}
	sec, nsec := secNs(at.UnixNano())
	var pds, pdn any = "z", 0
	if tk.PrevDue > 0 {
		pds, pdn = secNs(tk.PrevDue)
	}
	as, an := secNs(tk.Act)
	es, en := secNs(tk.End)
	v, err := oldPairCancel.Run(t.Context(), s.rdb, s.pairKeys(p), sec, nsec, keepArg(time.Unix(0, max(at.UnixNano(), tk.Act))),
		strconv.FormatUint(tk.ID, 10), strconv.FormatUint(tk.PrevTop, 10), pds, pdn, as, an, es, en).Result()
	if err != nil {
		t.Fatal(err)
	}
	n, _ := v.(int64)
	return n == 1
}

// oldRefuse is b16edfb's Store.Refuse.
func (s *Store) oldRefuse(t *testing.T, p pairlimit.Pair, at time.Time, holds []time.Duration, memory time.Duration) time.Duration {
	t.Helper()
	sec, nsec := secNs(at.UnixNano())
	args := []any{sec, nsec, keepArg(at), ns(max(memory, 0))}
	for _, h := range holds {
		args = append(args, ns(h))
	}
	v, err := oldPairRefuse.Run(t.Context(), s.rdb, s.pairKeys(p), args...).Result()
	if err != nil {
		t.Fatal(err)
	}
	n, _ := v.(int64)
	return time.Duration(n)
}

// During a rolling upgrade processes of the previous version (b16edfb's
// scripts) and of this one decide on the same keys: random reservations,
// give-backs (of either version's tickets, by either version) and 131056
// holds, each by a version drawn at random, leave the state the model
// computes and answer as it does.
func TestRollingUpgradeSharesKeys(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	holds := []time.Duration{time.Second, 4 * time.Second, 16 * time.Second}
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 131))
		p, _ := pairlimit.NewPair("106540352242922", strconv.Itoa(237690000040+int(seed)))
		var model pairstore.State
		var tickets []pairstore.Ticket
		now := t0.Add(time.Duration(rng.Int64N(1e9)))
		for step := range 250 {
			now = now.Add(time.Duration(rng.Int64N(int64(4*time.Second))) - time.Second)
			if rng.IntN(40) == 0 {
				now = now.Add(36 * time.Hour) // the base moves after a day
			}
			at := now.Add(time.Duration(rng.Int64N(int64(10*time.Second))) - 2*time.Second)
			old := rng.IntN(2) == 0
			var op string
			switch k := rng.IntN(10); {
			case k < 5:
				op = "reserve"
				cost := time.Duration(1+rng.IntN(3))*6*time.Second + 250*time.Millisecond
				maxWait := pairlimit.InfDuration
				if rng.IntN(3) == 0 {
					maxWait = time.Duration(rng.Int64N(int64(10 * time.Second)))
				}
				var tk pairstore.Ticket
				var ok bool
				if old {
					tk, ok = s.oldReserve(t, p, at, cost, maxWait)
				} else {
					var err error
					if tk, ok, err = s.Reserve(ctx, p, at, cost, maxWait); err != nil {
						t.Fatal(err)
					}
				}
				wantAct := model.Next(at.UnixNano())
				wantOK := maxWait == pairlimit.InfDuration || wantAct <= at.UnixNano()+int64(maxWait)
				if ok != wantOK || tk.Act != wantAct {
					t.Fatalf("seed %d step %d (old %v): Reserve = %v %d, model %v %d", seed, step, old, ok, tk.Act, wantOK, wantAct)
				}
				if ok {
					var mt pairstore.Ticket
					model, mt = model.Reserve(at.UnixNano(), cost, tk.ID)
					if diff := cmp.Diff(mt, tk); diff != "" {
						t.Fatalf("seed %d step %d (old %v): ticket (-model +redis):\n%s", seed, step, old, diff)
					}
					tickets = append(tickets, tk)
				}
			case k < 7 && len(tickets) > 0:
				op = "cancel"
				tk := tickets[rng.IntN(len(tickets))]
				var got bool
				if old {
					got = s.oldCancel(t, p, at, tk)
				} else {
					var err error
					if got, err = s.Cancel(ctx, p, at, tk); err != nil {
						t.Fatal(err)
					}
				}
				var want bool
				model, want = model.Cancel(tk, at.UnixNano())
				if got != want {
					t.Fatalf("seed %d step %d (old %v): Cancel = %v, model %v", seed, step, old, got, want)
				}
			default:
				op = "refuse"
				var got time.Duration
				if old {
					got = s.oldRefuse(t, p, at, holds, 15*time.Minute)
				} else {
					var err error
					if got, err = s.Refuse(ctx, p, at, holds, 15*time.Minute); err != nil {
						t.Fatal(err)
					}
				}
				var want time.Duration
				model, want = model.Refuse(at.UnixNano(), holds)
				if got != want {
					t.Fatalf("seed %d step %d (old %v): Refuse = %v, model %v", seed, step, old, got, want)
				}
			}
			model = checkPairState(t, s, p, at, model, fmt.Sprintf("seed %d step %d after %s (old %v)", seed, step, op, old))
		}
	}
}

var (
	oldBucketReserve = redis.NewScript(oldBucketReserveLua)
	oldBucketCancel  = redis.NewScript(oldBucketCancelLua)
	oldBucketHold    = redis.NewScript(oldBucketHoldLua)
)

// bucketStateOf reads bucket key's whole state.
func (th *Throughput) bucketStateOf(t *testing.T, key string) throughputstore.BucketState {
	t.Helper()
	h, err := th.s.rdb.HMGet(t.Context(), th.bucketKey(key)[0], "bs", "bn", "tat", "hold", "top", "iv").Result()
	if err != nil {
		t.Fatal(err)
	}
	num := func(i int) (int64, bool) {
		s, ok := h[i].(string)
		if !ok {
			return 0, false
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("field %d: %q", i, s)
		}
		return int64(f), true
	}
	bs, _ := num(0)
	bn, _ := num(1)
	var st throughputstore.BucketState
	if v, ok := num(2); ok {
		st.TAT = bs*1e9 + bn + v
	}
	if v, ok := num(3); ok {
		st.Hold = bs*1e9 + bn + v
	}
	top, _ := num(4)
	st.Top = uint64(top)
	st.Interval, _ = num(5)
	return st
}

// The buckets of both versions, as the pairs': b16edfb's bucket scripts
// (numbers written with %d, an EXISTS before Cancel, TIME read twice) and
// today's decide on one key at random and leave the model's state.
func TestRollingUpgradeSharesBuckets(t *testing.T) {
	s := newTestStore(t)
	th := s.Throughput().(*Throughput)
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(5, 131))
	const key, burst = "106540352242922", 4
	var model throughputstore.BucketState
	var tickets []throughputstore.BucketTicket
	now := t0
	for step := range 400 {
		now = now.Add(time.Duration(rng.Int64N(int64(300*time.Millisecond))) - 100*time.Millisecond)
		if rng.IntN(60) == 0 {
			now = now.Add(36 * time.Hour)
		}
		at := now.Add(time.Duration(rng.Int64N(int64(time.Second))) - 200*time.Millisecond)
		old := rng.IntN(2) == 0
		sec, nsec := secNs(at.UnixNano())
		var op string
		switch k := rng.IntN(10); {
		case k < 6:
			op = "reserve"
			n := 1 + rng.IntN(burst)
			interval := []time.Duration{50 * time.Millisecond, 80 * time.Millisecond}[rng.IntN(2)]
			maxWait := time.Duration(math.MaxInt64)
			if rng.IntN(2) == 0 {
				maxWait = time.Duration(rng.Int64N(int64(400 * time.Millisecond)))
			}
			var tk throughputstore.BucketTicket
			var ok bool
			if old {
				wait := int64(-1)
				if maxWait < time.Duration(math.MaxInt64) {
					wait = int64(maxWait)
				}
				v, err := oldBucketReserve.Run(ctx, s.rdb, th.bucketKey(key), sec, nsec, n, int64(interval), burst, wait, int64(bucketKeep)).Result()
				if err != nil {
					t.Fatal(err)
				}
				a := replyArray(v)
				base := replyInt(a, 1)*1e9 + replyInt(a, 2)
				tk.Act, ok = base+replyInt(a, 3), replyInt(a, 0) == 1
				if ok {
					tk.ID, tk.PrevTop = replyUint(a, 4), replyUint(a, 5)
					if replyStr(a, 6) != "z" {
						tk.PrevTAT = base + replyInt(a, 6)
					}
				}
			} else {
				var err error
				if tk, ok, err = th.Reserve(ctx, key, at, n, interval, burst, maxWait); err != nil {
					t.Fatal(err)
				}
			}
			wantAct := model.Next(at.UnixNano(), n, interval, burst)
			wantOK := maxWait == time.Duration(math.MaxInt64) || wantAct <= at.UnixNano()+int64(maxWait)
			if ok != wantOK || tk.Act != wantAct {
				t.Fatalf("step %d (old %v): Reserve = %v %d, model %v %d", step, old, ok, tk.Act, wantOK, wantAct)
			}
			if ok {
				var mt throughputstore.BucketTicket
				model, mt = model.Reserve(at.UnixNano(), n, interval, burst, tk.ID)
				if mt != tk {
					t.Fatalf("step %d (old %v): ticket %+v, model %+v", step, old, tk, mt)
				}
				tickets = append(tickets, tk)
			}
		case k < 8 && len(tickets) > 0:
			op = "cancel"
			tk := tickets[rng.IntN(len(tickets))]
			var got bool
			if old {
				var ps, pn any = "z", 0
				if tk.PrevTAT > 0 {
					ps, pn = secNs(tk.PrevTAT)
				}
				as, an := secNs(tk.Act)
				v, err := oldBucketCancel.Run(ctx, s.rdb, th.bucketKey(key), sec, nsec, int64(bucketKeep),
					strconv.FormatUint(tk.ID, 10), strconv.FormatUint(tk.PrevTop, 10), ps, pn, as, an).Result()
				if err != nil {
					t.Fatal(err)
				}
				got = v.(int64) == 1
			} else {
				var err error
				if got, err = th.Cancel(ctx, key, at, tk); err != nil {
					t.Fatal(err)
				}
			}
			var want bool
			model, want = model.Cancel(tk, at.UnixNano())
			if got != want {
				t.Fatalf("step %d (old %v): Cancel = %v, model %v", step, old, got, want)
			}
		default:
			op = "hold"
			until := at.Add(time.Duration(rng.Int64N(int64(time.Second))))
			us, un := secNs(until.UnixNano())
			if old {
				if err := oldBucketHold.Run(ctx, s.rdb, th.bucketKey(key), us, un, int64(bucketKeep)).Err(); err != nil {
					t.Fatal(err)
				}
			} else if _, err := th.Hold(ctx, key, until); err != nil {
				t.Fatal(err)
			}
			model = model.Extend(until.UnixNano())
		}
		if got := th.bucketStateOf(t, key); got != model {
			t.Fatalf("step %d after %s (old %v): Redis holds %+v, model %+v", step, op, old, got, model)
		}
	}
}
