package redisstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	"github.com/wapace/wapace/internal/redistest"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/redisstore"
	"github.com/wapace/wapace/throughput"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func init() {
	// The outage tests kill Redis on purpose: go-redis would log every
	// failed dial.
	redis.SetLogger(&logging.VoidLogger{})
}

func killable(t *testing.T, opts ...redisstore.Option) (*redisstore.Store, func()) {
	t.Helper()
	srv := redistest.Start(t)
	opt, _ := redis.ParseURL(srv.URL)
	opt.MaxRetries = -1
	opt.DialTimeout = 200 * time.Millisecond
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return redisstore.New(rdb, opts...), srv.Kill
}

// Redis dies mid-run: every decision after it fails closed, typed, and
// reserves nothing; none before it is lost.
func TestFailClosedWhenRedisDies(t *testing.T) {
	s, kill := killable(t, redisstore.WithTimeout(300*time.Millisecond))
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(s))
	p, _ := pairlimit.NewPair("106540352242922", "237690000001")
	r := lim.ReserveN(t0, p, 1)
	if !r.OK() {
		t.Fatal(r.Err())
	}
	kill()
	r2 := lim.ReserveN(t0, p, 1)
	var ue *redisstore.UnavailableError
	if r2.OK() || !errors.Is(r2.Err(), pairlimit.ErrStore) || !errors.Is(r2.Err(), redisstore.ErrUnavailable) || !errors.As(r2.Err(), &ue) {
		t.Fatalf("after the kill: OK %v, err %v; want not OK, matching ErrStore and ErrUnavailable", r2.OK(), r2.Err())
	}
	if !r2.TimeToAct().IsZero() {
		t.Error("a failed reservation names a time to act")
	}
	if lim.AllowN(t0.Add(time.Hour), p, 1) {
		t.Error("AllowN admitted without Redis")
	}
	if _, err := lim.ReadyAt(t0, p, 1); !errors.Is(err, redisstore.ErrUnavailable) {
		t.Errorf("ReadyAt = %v", err)
	}
}

func TestLocalFallbackDecidesDuringOutage(t *testing.T) {
	s, kill := killable(t, redisstore.WithTimeout(300*time.Millisecond), redisstore.WithLocalFallback(clock.New()))
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(s))
	p, _ := pairlimit.NewPair("106540352242922", "237690000001")
	kill()
	a := lim.ReserveN(t0, p, 1)
	b := lim.ReserveN(t0, p, 1)
	if !a.OK() || !b.OK() || !b.TimeToAct().Equal(t0.Add(6*time.Second+pairlimit.DefaultMargin)) {
		t.Fatalf("fallback: %v %v, b at %v", a.Err(), b.Err(), b.TimeToAct())
	}
	b.CancelAt(t0)
	if c := lim.ReserveN(t0, p, 1); !c.TimeToAct().Equal(b.TimeToAct()) {
		t.Errorf("the local give-back did not reach the local store: %v", c.TimeToAct())
	}
}

func TestLocalFallbackCoversThroughput(t *testing.T) {
	s, kill := killable(t, redisstore.WithTimeout(300*time.Millisecond), redisstore.WithLocalFallback(clock.New()))
	num := throughput.New(1, throughput.WithStore(s.Throughput(), "106540352242922"))
	kill()
	a, b := num.ReserveN(t0, 1), num.ReserveN(t0, 1)
	if !a.OK() || !b.OK() || !b.TimeToAct().After(a.TimeToAct()) {
		t.Fatalf("fallback: %v %v, %v then %v", a.Err(), b.Err(), a.TimeToAct(), b.TimeToAct())
	}
	tier := throughput.NewTier(1, throughput.WithStore(s.Throughput(), "portfolio"))
	if c := tier.Claim(t0, "237690000001"); !c.OK() {
		t.Fatalf("tier claim during the outage: %v", c.Err())
	}
	if ok, _ := tier.Admit(t0, "237690000002"); ok {
		t.Error("the local tier admitted beyond its limit")
	}
}

func TestThroughputFailsClosed(t *testing.T) {
	s, kill := killable(t, redisstore.WithTimeout(300*time.Millisecond))
	num := throughput.New(80, throughput.WithStore(s.Throughput(), "106540352242922"))
	kill()
	r := num.ReserveN(t0, 1)
	if r.OK() || !errors.Is(r.Err(), throughput.ErrStore) || !errors.Is(r.Err(), redisstore.ErrUnavailable) {
		t.Fatalf("after the kill: OK %v, err %v", r.OK(), r.Err())
	}
	tier := throughput.NewTier(10, throughput.WithStore(s.Throughput(), "portfolio"))
	if c := tier.Claim(t0, "237690000001"); c.OK() || !errors.Is(c.Err(), redisstore.ErrUnavailable) {
		t.Fatalf("tier claim after the kill: %v %v", c.OK(), c.Err())
	}
}
