package throughput_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/throughputstore"
	"github.com/wapace/wapace/throughput/usage"
)

// TestInvalidOptions: an option given to a constructor it does not apply
// to, or a value a limit cannot honour, is neither ignored nor clamped
// (issue 20). Every decision fails with an error matching ErrInvalidOption
// that names what is wrong; nothing is admitted, held or counted, and
// nothing panics.
func TestInvalidOptions(t *testing.T) {
	t.Parallel()
	store := throughputstore.NewMemoryStore(nil)
	check := func(t *testing.T, what string, err error, want string) {
		t.Helper()
		if !errors.Is(err, throughput.ErrInvalidOption) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrInvalidOption naming %q", what, err, want)
		}
	}
	limiters := []struct {
		name string
		mps  int
		opts []throughput.Option
		want string
	}{
		{"headroom above 0.9", 80, []throughput.Option{throughput.WithHeadroom(0.95)}, "WithHeadroom(0.95)"},
		{"negative headroom", 80, []throughput.Option{throughput.WithHeadroom(-0.1)}, "WithHeadroom(-0.1)"},
		{"NaN headroom", 80, []throughput.Option{throughput.WithHeadroom(math.NaN())}, "WithHeadroom(NaN)"},
		{"a Budget's option", 80, []throughput.Option{throughput.WithBusinessID("waba")}, "WithBusinessID applies to NewBudget only"},
		{"a store without a key", 80, []throughput.Option{throughput.WithStore(store, "")}, "WithStore: an empty key"},
		{"above 10,000 mps", 10_001, nil, "New(10001)"},
		{"MaxInt mps", math.MaxInt, nil, "New(9223372036854775807)"},
	}
	for _, tt := range limiters {
		t.Run("New/"+tt.name, func(t *testing.T) {
			t.Parallel()
			lim := throughput.New(tt.mps, tt.opts...)
			r := lim.ReserveN(t0, 1)
			if r.OK() {
				t.Error("ReserveN is OK")
			}
			check(t, "ReserveN", r.Err(), tt.want)
			check(t, "Reserve", lim.Reserve().Err(), tt.want)
			check(t, "WaitN", lim.WaitN(context.Background(), 1), tt.want)
			check(t, "SetMPSAt", lim.SetMPSAt(t0, throughput.Upgraded), tt.want)
			if lim.AllowN(t0, 1) || lim.Allow() {
				t.Error("AllowN admitted")
			}
			if d := lim.Throttled(t0, time.Second, 30*time.Second); d != 0 {
				t.Errorf("Throttled held %v", d)
			}
			if d := lim.Hold(t0, time.Second, time.Minute); d != 0 {
				t.Errorf("Hold held %v", d)
			}
			lim.ObserveSend(t0, t0.Add(time.Second), t0.Add(2*time.Second))
			lim.Accepted(t0)
			if !lim.HeldUntil().IsZero() {
				t.Errorf("held until %v", lim.HeldUntil())
			}
		})
	}
	tiers := []struct {
		name string
		opts []throughput.Option
		want string
	}{
		{"a Limiter's headroom", []throughput.Option{throughput.WithHeadroom(0.1)}, "WithHeadroom applies to New only, not to NewTier"},
		{"a Limiter's adaptive rate", []throughput.Option{throughput.WithAdaptiveRate(false)}, "WithAdaptiveRate applies to New only"},
		{"a Budget's option", []throughput.Option{throughput.WithBusinessID("waba")}, "WithBusinessID applies to NewBudget only"},
		{"a store without a key", []throughput.Option{throughput.WithStore(store, "")}, "WithStore: an empty key"},
	}
	for _, tt := range tiers {
		t.Run("NewTier/"+tt.name, func(t *testing.T) {
			t.Parallel()
			tier := throughput.NewTier(throughput.Tier250, tt.opts...)
			c := tier.Claim(t0, "237690000001")
			if c.OK() || !c.RetryAt().IsZero() {
				t.Errorf("Claim: OK %v, retry at %v", c.OK(), c.RetryAt())
			}
			check(t, "Claim", c.Err(), tt.want)
			c.Release()
			if ok, retryAt := tier.Admit(t0, "237690000001"); ok || !retryAt.IsZero() {
				t.Errorf("Admit: %v, %v", ok, retryAt)
			}
			if n := tier.Count(t0); n != 0 {
				t.Errorf("Count = %d", n)
			}
		})
	}
	budgets := []struct {
		name  string
		calls int
		opts  []throughput.Option
		want  string
	}{
		{"a Limiter's headroom", 200, []throughput.Option{throughput.WithHeadroom(0.1)}, "WithHeadroom applies to New only, not to NewBudget"},
		{"a Limiter's adaptive rate", 200, []throughput.Option{throughput.WithAdaptiveRate(true)}, "WithAdaptiveRate applies to New only"},
		{"a store without a key", 200, []throughput.Option{throughput.WithStore(store, "")}, "WithStore: an empty key"},
		{"above 2^31-1 calls", math.MaxInt32 + 1, nil, "NewBudget(2147483648)"},
	}
	for _, tt := range budgets {
		t.Run("NewBudget/"+tt.name, func(t *testing.T) {
			t.Parallel()
			b := throughput.NewBudget(tt.calls, tt.opts...)
			r := b.ReserveN(t0, 1)
			if r.OK() {
				t.Error("ReserveN is OK")
			}
			check(t, "ReserveN", r.Err(), tt.want)
			check(t, "WaitN", b.WaitN(context.Background(), 1), tt.want)
			if d := b.Hold(t0, time.Minute, time.Hour); d != 0 {
				t.Errorf("Hold held %v", d)
			}
			if d := b.Observe(t0, []usage.Usage{{Type: usage.TypeManagement, CallCount: 100}}); d != 0 {
				t.Errorf("Observe held %v", d)
			}
			b.Accepted(t0)
			if !b.HeldUntil().IsZero() || !b.RefusedUntil().IsZero() {
				t.Errorf("held until %v, refused until %v", b.HeldUntil(), b.RefusedUntil())
			}
		})
	}

	// A valid Limiter refuses a figure above 10,000 in SetMPSAt and keeps
	// its own.
	lim := throughput.New(throughput.Default)
	check(t, "SetMPSAt(10001)", lim.SetMPSAt(t0, 10_001), "SetMPSAt(10001)")
	if lim.PerSecond() != throughput.Default {
		t.Errorf("PerSecond after a refused SetMPSAt = %d", lim.PerSecond())
	}
	if err := lim.SetMPSAt(t0, 10_000); err != nil || lim.PerSecond() != 10_000 {
		t.Errorf("SetMPSAt(10000): %v, PerSecond %d", err, lim.PerSecond())
	}
	// Each option is valid where it applies, at its boundaries.
	valid := map[string]bool{
		"headroom 0":     throughput.New(80, throughput.WithHeadroom(0)).ReserveN(t0, 1).OK(),
		"headroom 0.9":   throughput.New(80, throughput.WithHeadroom(0.9)).ReserveN(t0, 1).OK(),
		"adaptive":       throughput.New(80, throughput.WithAdaptiveRate(false)).ReserveN(t0, 1).OK(),
		"10,000 mps":     throughput.New(10_000).ReserveN(t0, 1).OK(),
		"nil store":      throughput.New(80, throughput.WithStore(nil, "")).ReserveN(t0, 1).OK(),
		"nil clock":      throughput.New(80, throughput.WithClock(nil)).ReserveN(t0, 1).OK(),
		"budget's id":    throughput.NewBudget(200, throughput.WithBusinessID("waba")).ReserveN(t0, 1).OK(),
		"budget's store": throughput.NewBudget(200, throughput.WithStore(store, "b")).ReserveN(t0, 1).OK(),
		"tier's store":   throughput.NewTier(1, throughput.WithStore(store, "t")).Claim(t0, "237690000001").OK(),
	}
	for name, ok := range valid {
		if !ok {
			t.Errorf("%s: not OK", name)
		}
	}
}
