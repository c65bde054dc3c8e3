package throughput

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// TestTierReleaseThenReclaimSameInstant: a claim given back and made again
// at the same instant (a send that failed to submit and is retried with
// the instant it read before) must count its recipient once. It left two
// identical admissions in the queue, both looking like the recipient's
// latest, and a decision at an instant ahead of the clock counted that
// recipient as expired twice: the tier admitted one recipient beyond its
// limit, and Count fell short by one.
func TestTierReleaseThenReclaimSameInstant(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_790_000_000, 0)
	clk := &setClock{Clock: clock.NewMock(), now: t0}
	tier := NewTier(2, WithClock(clk))
	c := tier.Claim(t0, "237690000001")
	if !c.OK() {
		t.Fatal("first claim refused")
	}
	c.Release()
	if c := tier.Claim(t0, "237690000001"); !c.OK() {
		t.Fatal("claim after the give-back refused")
	}
	if !tier.Claim(t0.Add(time.Hour), "237690000002").OK() {
		t.Fatal("second recipient refused")
	}
	// A day on (the clock stays at t0): the first recipient has expired,
	// the second is still counted.
	later := t0.Add(TierWindow)
	if got := tier.Count(later); got != 1 {
		t.Errorf("Count a day on = %d, want 1", got)
	}
	if !tier.Claim(later, "237690000003").OK() {
		t.Fatal("a recipient within the limit refused")
	}
	if c := tier.Claim(later, "237690000004"); c.OK() {
		t.Errorf("a third recipient counted at once admitted beyond the limit of 2")
	}
	if got := tier.Count(later); got != 2 {
		t.Errorf("Count a day on = %d, want 2", got)
	}
}

// TestTierPastClaimExpiresOnTime: a recipient admitted at an instant
// earlier than one admitted before it (a send whose instant was read
// before another's) counts until 24 hours after its own instant, not until
// the later admission expires: a day and a second on, it no longer counts,
// and its place is free for a new recipient. The queue kept admissions in
// the order of the calls and expired them only when its head passed them,
// so the earlier admission stayed counted behind the later one.
func TestTierPastClaimExpiresOnTime(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_790_000_000, 0)
	clk := &setClock{Clock: clock.NewMock(), now: t0.Add(10 * time.Hour)}
	tier := NewTier(2, WithClock(clk))
	if !tier.Claim(t0.Add(10*time.Hour), "237690000001").OK() {
		t.Fatal("first claim refused")
	}
	if !tier.Claim(t0, "237690000002").OK() { // asked earlier, arrived later
		t.Fatal("claim at an earlier instant refused")
	}
	later := t0.Add(TierWindow + time.Second)
	clk.now = later
	if got := tier.Count(later); got != 1 {
		t.Errorf("Count a day and a second on = %d, want 1", got)
	}
	if c := tier.Claim(later, "237690000003"); !c.OK() {
		t.Errorf("a second recipient refused (retry at %v) with one counted and a limit of 2", c.RetryAt())
	}
}
