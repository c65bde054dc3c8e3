package redisstore_test

import (
	"testing"
	"time"

	"github.com/wapace/wapace/internal/redistest"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
	"github.com/wapace/wapace/redisstore"
	"github.com/wapace/wapace/throughput"
)

// Keys expire by themselves once their state may be forgotten: on the
// caller's clock when it is close to Redis's, and for as long as the state
// needs when the caller runs on simulated time far from it.
func TestKeysExpireWhenDebtIsRepaid(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	st := redisstore.New(rdb, redisstore.WithPrefix(prefix))
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(st))
	keep := pairstore.KeepAfterDue + redisstore.SkewAllowance
	for _, tc := range []struct {
		name string
		at   time.Time
		to   string // one pair each: the store remembers its own debts (WithLostStateDebt)
	}{
		{"real time", time.Now(), "237690000001"},
		{"simulated time", time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC), "237690000002"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := pairlimit.NewPair("106540352242922", tc.to)
			key := prefix + "{106540352242922}:p:" + tc.to
			r := lim.ReserveN(tc.at, p, 3) // owes 3 x 6 s + 250 ms
			if !r.OK() {
				t.Fatal(r.Err())
			}
			ttl, err := rdb.PTTL(t.Context(), key).Result()
			if err != nil {
				t.Fatal(err)
			}
			want := 18250*time.Millisecond + keep
			if ttl < want-2*time.Second || ttl > want+time.Second {
				t.Errorf("PTTL = %v, want about %v", ttl, want)
			}
		})
	}
	num := throughput.New(80, throughput.WithStore(st.Throughput(), "106540352242922"))
	num.Throttled(time.Now(), time.Second, 30*time.Second) // a 1 s hold, as for a 130429
	ttl, err := rdb.PTTL(t.Context(), prefix+"{106540352242922}:b").Result()
	if err != nil || ttl <= 0 || ttl > time.Second+time.Second+redisstore.SkewAllowance+time.Second {
		t.Errorf("bucket PTTL = %v, %v", ttl, err)
	}
}

// A refund (Reservation.Refund passes an instant in 1677) leaves the key
// expiring with the pair's debt, not decades later.
func TestRefundKeepsExpiry(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	st := redisstore.New(rdb, redisstore.WithPrefix(prefix))
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(st))
	p, _ := pairlimit.NewPair("106540352242922", "237690000001")
	key := prefix + "{106540352242922}:p:237690000001"
	for _, at := range []time.Time{time.Now(), time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)} {
		a := lim.ReserveN(at, p, 1)
		b := lim.ReserveN(at, p, 1)
		b.Refund()
		_ = a
		ttl, err := rdb.PTTL(t.Context(), key).Result()
		if err != nil || ttl <= 0 || ttl > 2*time.Minute {
			t.Errorf("at %v: PTTL after a refund = %v, %v; want about the pair's debt plus %v", at, ttl, err, pairstore.KeepAfterDue+redisstore.SkewAllowance)
		}
		rdb.Del(t.Context(), key)
	}
}
