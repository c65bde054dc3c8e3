package redisstore_test

import (
	"testing"
	"time"

	"github.com/wapace/wapace/internal/redistest"
	"github.com/wapace/wapace/redisstore"
	"github.com/wapace/wapace/throughput"
)

// The two Tier defects found in the memory Tier's queue (a give-back and
// a new claim of the same recipient at the same instant counted it twice;
// an admission at an earlier instant stayed counted until a later one
// expired) must not exist on Redis either, where Tiers in several
// processes share one portfolio.
func newRedisTier(t *testing.T, limit int) *throughput.Tier {
	t.Helper()
	s := redisstore.New(redistest.Client(t), redisstore.WithPrefix(redistest.Prefix(t)))
	return throughput.NewTier(limit, throughput.WithStore(s.Throughput(), "portfolio"))
}

func TestTierReleaseThenReclaimSameInstant(t *testing.T) {
	t0 := time.Unix(1_790_000_000, 0)
	tier := newRedisTier(t, 2)
	c := tier.Claim(t0, "237690000001")
	if !c.OK() {
		t.Fatalf("first claim refused: %v", c.Err())
	}
	c.Release()
	if c := tier.Claim(t0, "237690000001"); !c.OK() {
		t.Fatalf("claim after the give-back refused: %v", c.Err())
	}
	if c := tier.Claim(t0.Add(time.Hour), "237690000002"); !c.OK() {
		t.Fatalf("second recipient refused: %v", c.Err())
	}
	later := t0.Add((24 * time.Hour))
	if got := tier.Count(later); got != 1 {
		t.Errorf("Count a day on = %d, want 1", got)
	}
	if !tier.Claim(later, "237690000003").OK() {
		t.Fatal("a recipient within the limit refused")
	}
	if tier.Claim(later, "237690000004").OK() {
		t.Errorf("a third recipient counted at once admitted beyond the limit of 2")
	}
	if got := tier.Count(later); got != 2 {
		t.Errorf("Count a day on = %d, want 2", got)
	}
}

func TestTierPastClaimExpiresOnTime(t *testing.T) {
	t0 := time.Unix(1_790_000_000, 0)
	tier := newRedisTier(t, 2)
	if !tier.Claim(t0.Add(10*time.Hour), "237690000001").OK() {
		t.Fatal("first claim refused")
	}
	if !tier.Claim(t0, "237690000002").OK() { // asked earlier, arrived later
		t.Fatal("claim at an earlier instant refused")
	}
	later := t0.Add((24 * time.Hour) + time.Second)
	if got := tier.Count(later); got != 1 {
		t.Errorf("Count a day and a second on = %d, want 1", got)
	}
	if c := tier.Claim(later, "237690000003"); !c.OK() {
		t.Errorf("a second recipient refused (retry at %v) with one counted and a limit of 2", c.RetryAt())
	}
}
