package throughput_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/throughput"
)

func recipient(i int) string { return fmt.Sprintf("+2376%08d", i) }

func TestTier250(t *testing.T) {
	t.Parallel()
	tier := throughput.NewTier(throughput.Tier250)
	for i := range 250 {
		if ok, _ := tier.Admit(t0.Add(time.Duration(i)*time.Minute), recipient(i)); !ok {
			t.Fatalf("recipient %d refused", i)
		}
	}
	now := t0.Add(250 * time.Minute)
	ok, retryAt := tier.Admit(now, recipient(250))
	if ok || !retryAt.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("251st = %v, retry at %v; want refused until %v", ok, retryAt, t0.Add(24*time.Hour))
	}
	// Repeats are free, in any spelling.
	if ok, _ := tier.Admit(now, "2376-0000-0007"); !ok {
		t.Error("a counted recipient was refused")
	}
	if got := tier.Count(now); got != 250 {
		t.Errorf("Count = %d, want 250", got)
	}
	// Exact at the edge: one nanosecond before the first slot frees, still
	// refused; at the instant, admitted.
	if ok, _ := tier.Admit(retryAt.Add(-time.Nanosecond), recipient(250)); ok {
		t.Error("admitted before the oldest slot freed")
	}
	if ok, _ := tier.Admit(retryAt, recipient(250)); !ok {
		t.Error("refused when the oldest slot freed")
	}
	// Recipient 7 was renewed at +250 min, so it outlives recipient 1.
	if ok, at := tier.Admit(t0.Add(24*time.Hour+time.Minute), recipient(251)); !ok {
		t.Errorf("refused after the second slot freed (retry at %v)", at)
	}
	if ok, at := tier.Admit(t0.Add(24*time.Hour+time.Minute), recipient(252)); ok || !at.Equal(t0.Add(24*time.Hour+2*time.Minute)) {
		t.Errorf("third new recipient = %v, retry %v", ok, at)
	}
}

func TestTierRenewalAndExpiry(t *testing.T) {
	t.Parallel()
	tier := throughput.NewTier(2)
	tier.Admit(t0, recipient(1))
	tier.Admit(t0.Add(time.Hour), recipient(2))
	tier.Admit(t0.Add(20*time.Hour), recipient(1)) // renews recipient 1
	ok, retry := tier.Admit(t0.Add(21*time.Hour), recipient(3))
	if ok || !retry.Equal(t0.Add(25*time.Hour)) {
		t.Fatalf("Admit = %v %v, want refused until +25h (recipient 2 is the oldest now)", ok, retry)
	}
	if ok, _ := tier.Admit(t0.Add(25*time.Hour), recipient(3)); !ok {
		t.Error("refused after recipient 2 expired")
	}
	if got := tier.Count(t0.Add(100 * time.Hour)); got != 0 {
		t.Errorf("Count long after = %d", got)
	}
}

func TestTierSharedByNumbers(t *testing.T) {
	t.Parallel()
	// Two numbers of one portfolio share one Tier: 100 recipients each, in
	// parallel, against a limit of 150.
	tier := throughput.NewTier(150)
	var wg sync.WaitGroup
	admitted := make([]int, 2)
	for n := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				if ok, _ := tier.Admit(t0, recipient(n*1000+i)); ok {
					admitted[n]++
				}
			}
		}()
	}
	wg.Wait()
	if admitted[0]+admitted[1] != 150 {
		t.Errorf("admitted %v, want 150 in all", admitted)
	}
}

func TestTierUnlimitedAndInvalid(t *testing.T) {
	t.Parallel()
	u := throughput.NewTier(throughput.Unlimited)
	for i := range 1000 {
		if ok, _ := u.Admit(t0, recipient(i)); !ok {
			t.Fatal("unlimited tier refused")
		}
	}
	if u.Count(t0) != 0 || u.Limit() != throughput.Unlimited {
		t.Error("unlimited tier kept state")
	}
	tier := throughput.NewTier(throughput.Tier250)
	if ok, at := tier.Admit(t0, "not a number"); ok || !at.IsZero() {
		t.Errorf("invalid recipient = %v %v", ok, at)
	}
	zero := throughput.NewTier(0)
	if ok, _ := zero.Admit(t0, recipient(1)); ok {
		t.Error("a tier of 0 admitted a recipient")
	}
}

func TestTierCompactsStaleEntries(t *testing.T) {
	t.Parallel()
	// One recipient messaged a million times stays one count, and the tier
	// keeps working (stale queue entries are compacted).
	tier := throughput.NewTier(throughput.Tier250)
	now := t0
	for range 1_000_000 {
		now = now.Add(time.Millisecond)
		tier.Admit(now, recipient(1))
	}
	if got := tier.Count(now); got != 1 {
		t.Errorf("Count = %d, want 1", got)
	}
}

func TestTierCountsBSUID(t *testing.T) {
	t.Parallel()
	tier := throughput.NewTier(2)
	for _, to := range []string{"CO.1949266959121697", "+57 300 000 0001"} {
		if ok, _ := tier.Admit(t0, to); !ok {
			t.Fatalf("%s refused", to)
		}
	}
	if ok, _ := tier.Admit(t0, "CO.1949266959121697"); !ok {
		t.Error("a counted BSUID was refused")
	}
	if ok, _ := tier.Admit(t0, "BR.1502576394655843"); ok {
		t.Error("a third recipient admitted by a tier of 2")
	}
	if got := tier.Count(t0); got != 2 {
		t.Errorf("Count = %d, want 2", got)
	}
}
