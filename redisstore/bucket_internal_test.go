package redisstore

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/wapace/wapace/throughput"
	"golang.org/x/time/rate"
)

// The bucket script admits as rate.Limiter does (to within a microsecond
// of rounding), and never more than the per-second figure in a closed
// one-second window.
func TestBucketScriptMatchesRate(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	const perSecond, burst = 80, 1
	r := float64(perSecond - burst)
	spec := bucketSpec{emission: 1e9 / r, burst: burst}
	lim := rate.NewLimiter(rate.Limit(r), burst)
	rng := rand.New(rand.NewPCG(3, 4))
	now := t0.Add(987654321)
	var acts []time.Time
	key := s.numberKey(106540352242922)
	for i := range 1000 {
		now = now.Add(time.Duration(rng.Int64N(int64(20 * time.Millisecond))))
		want := lim.ReserveN(now, 1)
		got, err := s.reserveBucket(ctx, key, spec, now, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		d := got.act.Sub(now.Add(want.DelayFrom(now)))
		if !got.ok || d < -time.Microsecond || d > time.Microsecond {
			t.Fatalf("step %d: redis %v, rate %v", i, got.act, now.Add(want.DelayFrom(now)))
		}
		acts = append(acts, got.act)
	}
	checkWindows(t, acts, perSecond)
}

func checkWindows(t *testing.T, acts []time.Time, limit int) {
	t.Helper()
	sort.Slice(acts, func(i, j int) bool { return acts[i].Before(acts[j]) })
	j := 0
	for i := range acts {
		for acts[i].Sub(acts[j]) > time.Second {
			j++
		}
		if i-j+1 > limit {
			t.Fatalf("%d admitted in the closed second ending %v, limit %d", i-j+1, acts[i], limit)
		}
	}
}

func TestBucketCancelGivesBackExactly(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	spec := bucketSpec{emission: float64(time.Second / 10), burst: 1}
	key := s.numberKey(7)
	a, _ := s.reserveBucket(ctx, key, spec, t0, 1, false) // at t0
	b, _ := s.reserveBucket(ctx, key, spec, t0, 1, false) // t0+100ms
	c, _ := s.reserveBucket(ctx, key, spec, t0, 1, false) // t0+200ms
	if !a.act.Equal(t0) || !b.act.Equal(t0.Add(100*time.Millisecond)) || !c.act.Equal(t0.Add(200*time.Millisecond)) {
		t.Fatalf("acts %v %v %v", a.act.Sub(t0), b.act.Sub(t0), c.act.Sub(t0))
	}
	// b is cancelled: c was reserved after it, so as with rate.Limiter
	// nothing is restored; c cancelled after it restores one token.
	if ok, _ := s.cancelBucket(ctx, key, t0, b, true); ok {
		t.Error("b restored tokens that c used")
	}
	if ok, _ := s.cancelBucket(ctx, key, t0, c, true); !ok {
		t.Error("c restored nothing")
	}
	d, _ := s.reserveBucket(ctx, key, spec, t0, 1, false)
	if !d.act.Equal(t0.Add(200 * time.Millisecond)) {
		t.Errorf("next after give-back at %v, want +200ms", d.act.Sub(t0))
	}
	// A hold delays everything; counts pick the next hold.
	holds := []time.Duration{time.Second, 2 * time.Second}
	h1, _ := s.refuseBucket(ctx, key, spec, t0, "c1", 1, 0.1, holds)
	h2, _ := s.refuseBucket(ctx, key, spec, t0, "c1", 1, 0.1, holds)
	h3, _ := s.refuseBucket(ctx, key, spec, t0, "c1", 1, 0.1, holds)
	if h1 != time.Second || h2 != 2*time.Second || h3 != 2*time.Second {
		t.Errorf("holds %v %v %v", h1, h2, h3)
	}
	e, _ := s.reserveBucket(ctx, key, spec, t0, 1, false)
	if !e.act.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("during a hold: act %v, want +2s", e.act.Sub(t0))
	}
	if ok, err := s.reserveBucket(ctx, key, spec, t0, 1, true); err != nil || ok.ok {
		t.Errorf("AllowN during a hold = %v %v", ok.ok, err)
	}
	info, _ := s.readBucket(ctx, key)
	if !info.hold.Equal(t0.Add(2*time.Second)) || info.factor != 1 {
		t.Errorf("state %+v", info)
	}
	_ = s.acceptBucket(ctx, key)
	if h, _ := s.refuseBucket(ctx, key, spec, t0, "c1", 1, 0.1, holds); h != time.Second {
		t.Errorf("after Accepted the hold is %v", h)
	}
}

func TestBucketAdaptiveCutAndRecovery(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	spec := bucketSpec{emission: float64(time.Second / 100), burst: 1}
	key := s.numberKey(8)
	_, _ = s.refuseBucket(ctx, key, spec, t0, "c1", 0.75, 0.1, []time.Duration{time.Second})
	info, _ := s.readBucket(ctx, key)
	if info.factor != 0.75 {
		t.Fatalf("factor %v", info.factor)
	}
	// After the hold, the rate is 75: 10 reservations take 9 x 13.33 ms.
	start := t0.Add(time.Second)
	var last bucketGrant
	for range 10 {
		last, _ = s.reserveBucket(ctx, key, spec, start, 1, false)
	}
	if got, want := last.act.Sub(start), 9*time.Second/75; got < want-time.Microsecond || got > want+time.Microsecond {
		t.Errorf("10th at %v, want %v", got, want)
	}
	// 25 s later: two steps of recovery, the factor is 0.95.
	_, _ = s.reserveBucket(ctx, key, spec, t0.Add(25*time.Second), 1, false)
	info, _ = s.readBucket(ctx, key)
	if fmt.Sprintf("%.2f", info.factor) != "0.95" {
		t.Errorf("factor after 25 s: %v", info.factor)
	}
}

func TestTierScriptMatchesTier(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	const limit = 20
	mem := throughput.NewTier(limit)
	rng := rand.New(rand.NewPCG(5, 6))
	now := t0.Add(13)
	for i := range 2000 {
		now = now.Add(time.Duration(rng.Int64N(int64(3 * time.Hour))))
		to := uint64(237690000000 + rng.IntN(40))
		wantOK, wantRetry := mem.Admit(now, fmt.Sprint(to))
		got, err := s.admitTier(ctx, "portfolio", to, now, limit, throughput.TierWindow)
		if err != nil {
			t.Fatal(err)
		}
		if got.ok != wantOK || !got.retryAt.Equal(wantRetry) {
			t.Fatalf("step %d: redis %v %v, memory %v %v", i, got.ok, got.retryAt, wantOK, wantRetry)
		}
		n, _ := s.countTier(ctx, "portfolio", now, throughput.TierWindow)
		if want := mem.Count(now); n != want {
			t.Fatalf("step %d: count %d, memory %d", i, n, want)
		}
	}
}

func TestTierGiveBack(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	g1, _ := s.admitTier(ctx, "p", 1, t0, 1, 24*time.Hour)
	if g2, _ := s.admitTier(ctx, "p", 2, t0, 1, 24*time.Hour); g2.ok || !g2.retryAt.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("second recipient %+v", g2)
	}
	if ok, _ := s.giveBackTier(ctx, "p", 1, g1); !ok {
		t.Fatal("give-back refused")
	}
	if g2, _ := s.admitTier(ctx, "p", 2, t0, 1, 24*time.Hour); !g2.ok {
		t.Error("the slot given back was not reused")
	}
	// A renewal given back restores the previous instant.
	g3, _ := s.admitTier(ctx, "p", 2, t0.Add(time.Hour), 1, 24*time.Hour)
	if ok, _ := s.giveBackTier(ctx, "p", 2, g3); !ok {
		t.Fatal("renewal give-back refused")
	}
	if g, _ := s.admitTier(ctx, "p", 3, t0.Add(24*time.Hour), 1, 24*time.Hour); !g.ok {
		t.Error("the renewal was not undone")
	}
}

// Offsets from the tier's epoch are rebased after 50 days, exactly.
func TestTierEpochRebase(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	_, _ = s.admitTier(ctx, "p", 1, t0, 2, 24*time.Hour)
	late := t0.Add(60 * 24 * time.Hour)
	_, _ = s.admitTier(ctx, "p", 1, late.Add(7), 2, 24*time.Hour)
	_, _ = s.admitTier(ctx, "p", 2, late.Add(8), 2, 24*time.Hour)
	g, _ := s.admitTier(ctx, "p", 3, late.Add(9), 2, 24*time.Hour)
	if g.ok || !g.retryAt.Equal(late.Add(24*time.Hour+7)) {
		t.Errorf("after rebase: %+v, want retry at late+24h+7ns", g)
	}
}
