package throughput

import (
	"fmt"
	"sync"
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
	later := t0.Add(tierWindow)
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
	later := t0.Add(tierWindow + time.Second)
	clk.now = later
	if got := tier.Count(later); got != 1 {
		t.Errorf("Count a day and a second on = %d, want 1", got)
	}
	if c := tier.Claim(later, "237690000003"); !c.OK() {
		t.Errorf("a second recipient refused (retry at %v) with one counted and a limit of 2", c.RetryAt())
	}
}

// TestTierConcurrentClaimsHoldTheLimit: 64 goroutines claim recipients
// shared between them, and claim and give back recipients of their own, at
// past, present and future instants; however the calls interleave, no more
// recipients are counted than the limit, and Count agrees with the
// admissions standing.
func TestTierConcurrentClaimsHoldTheLimit(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_790_000_000, 0)
	clk := &setClock{Clock: clock.NewMock(), now: t0}
	const limit = 50
	tier := NewTier(limit, WithClock(clk))
	var wg sync.WaitGroup
	var mu sync.Mutex
	standing := map[string]bool{}
	for g := range 64 {
		wg.Go(func() {
			for i := range 40 {
				to := fmt.Sprintf("2376900%05d", (g*40+i)%300) // shared
				if i%4 == 3 {
					to = fmt.Sprintf("2377%04d%04d", g, i) // its own: given back
				}
				at := t0.Add(time.Duration(i%5-2) * time.Second)
				c := tier.Claim(at, to)
				if !c.OK() {
					if !c.RetryAt().After(at) {
						t.Errorf("refusal at %v retries at %v", at, c.RetryAt())
					}
					continue
				}
				mu.Lock()
				if i%4 == 3 {
					c.Release()
					delete(standing, to)
				} else {
					standing[to] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if got := tier.Count(t0.Add(3 * time.Second)); got != len(standing) || got > limit {
		t.Errorf("Count = %d, %d recipients standing, limit %d", got, len(standing), limit)
	}
}
