package webhook_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/throughput"
)

// TestTierLimit: Meta's limit names on the phone_number_quality_update
// webhook reference (TIER_50 ... TIER_100K, TIER_UNLIMITED, TIER_NOT_SET).
func TestTierLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		limit int
		ok    bool
	}{
		{"TIER_50", 50, true},
		{"TIER_250", throughput.Tier250, true},
		{"TIER_1K", 1_000, true},
		{"TIER_2K", throughput.Tier2K, true},
		{"TIER_10K", throughput.Tier10K, true},
		{"TIER_100K", throughput.Tier100K, true},
		{"TIER_UNLIMITED", throughput.Unlimited, true},
		{"tier_2k", throughput.Tier2K, true},
		{"TIER_NOT_SET", 0, false},
		{"", 0, false},
		{"2K", 0, false},
		{"10000", 10_000, true},
		{"-3", 0, false},
		{"TIER_", 0, false},
		{"TIER_-5", 0, false},
		{"TIER_0", 0, false},
		{"TIER_99999999999K", 0, false},
	}
	for _, tt := range tests {
		if l, ok := webhook.TierLimit(tt.name); l != tt.limit || ok != tt.ok {
			t.Errorf("TierLimit(%q) = %d, %v; want %d, %v", tt.name, l, ok, tt.limit, tt.ok)
		}
	}
	u := webhook.QualityUpdate{Event: "UPGRADE", CurrentLimit: "TIER_1K", MaxDailyConversationsPerBusiness: "TIER_10K"}
	if l, ok := u.TierLimit(); l != throughput.Tier10K || !ok {
		t.Errorf("portfolio limit wins: %d, %v", l, ok)
	}
	u = webhook.QualityUpdate{Event: "DOWNGRADE", CurrentLimit: "TIER_250"}
	if l, ok := u.TierLimit(); l != throughput.Tier250 || !ok {
		t.Errorf("current_limit fallback: %d, %v", l, ok)
	}
	u = webhook.QualityUpdate{Event: "FLAGGED"}
	if _, ok := u.TierLimit(); ok {
		t.Error("a quality-only event reported a limit")
	}
	c := webhook.CapabilityUpdate{MaxDailyConversationsPerBusiness: "TIER_100K"}
	if l, ok := c.TierLimit(); l != throughput.Tier100K || !ok {
		t.Errorf("capability limit: %d, %v", l, ok)
	}
}

func FuzzTierLimit(f *testing.F) {
	for _, s := range []string{"TIER_2K", "TIER_UNLIMITED", "TIER_NOT_SET", "TIER_1M", "TIER_9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, ok := webhook.TierLimit(s)
		if ok && l != throughput.Unlimited && (l <= 0 || l > 1_000_000_000) {
			t.Fatalf("TierLimit(%q) = %d", s, l)
		}
		if !ok && l != 0 {
			t.Fatalf("TierLimit(%q) = %d, false", s, l)
		}
	})
}

// TestApplyTierUpdate: issue 12 section 2. A messaging-limit change from
// the webhook feeds the portfolio's Tier, which keeps the recipients it
// counts.
func TestApplyTierUpdate(t *testing.T) {
	t.Parallel()
	clk := clock.NewMock()
	tier := throughput.NewTier(2, throughput.WithClock(clk))
	now := clk.Now()
	for _, to := range []string{"237690000001", "237690000002"} {
		if ok, _ := tier.Admit(now, to); !ok {
			t.Fatalf("admit %s", to)
		}
	}
	if ok, _ := tier.Admit(now, "237690000003"); ok {
		t.Fatal("a third recipient admitted at limit 2")
	}
	var applied []int
	h := newHandler(t,
		webhook.OnQuality(func(_ context.Context, _ webhook.Event, u *webhook.QualityUpdate) error {
			if l, ok := webhook.ApplyTierUpdate(tier, u); ok {
				applied = append(applied, l)
			}
			return nil
		}),
		webhook.OnCapability(func(_ context.Context, _ webhook.Event, u *webhook.CapabilityUpdate) error {
			if l, ok := webhook.ApplyTierUpdate(tier, u); ok {
				applied = append(applied, l)
			}
			return nil
		}),
		webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
	for _, tc := range []struct {
		field, value string
		limit        int
	}{
		{"phone_number_quality_update", `{"display_phone_number":"15550783881","event":"UPGRADE","old_limit":"TIER_250","current_limit":"TIER_2K","max_daily_conversations_per_business":"TIER_2K"}`, throughput.Tier2K},
		{"phone_number_quality_update", `{"display_phone_number":"15550783881","event":"FLAGGED"}`, throughput.Tier2K}, // no limit: unchanged
		{"business_capability_update", `{"max_daily_conversations_per_business":"TIER_10K","max_phone_numbers_per_business":20}`, throughput.Tier10K},
	} {
		if code := post(t, h, envelope(tc.field, tc.value)); code != http.StatusOK {
			t.Fatalf("POST = %d", code)
		}
		if got := tier.Limit(); got != tc.limit {
			t.Errorf("after %s %s: limit %d, want %d", tc.field, tc.value, got, tc.limit)
		}
	}
	if want := []int{throughput.Tier2K, throughput.Tier10K}; !slices.Equal(applied, want) {
		t.Errorf("applied %v, want %v", applied, want)
	}
	if n := tier.Count(now); n != 2 {
		t.Errorf("counted recipients %d after the change, want 2 (kept)", n)
	}
	if ok, _ := tier.Admit(now, "237690000003"); !ok {
		t.Error("a third recipient still refused after the upgrade")
	}
	if _, ok := webhook.ApplyTierUpdate(nil, &webhook.QualityUpdate{CurrentLimit: "TIER_1K"}); ok {
		t.Error("ApplyTierUpdate(nil tier) reported a change")
	}
	var nilUpdate *webhook.QualityUpdate
	if _, ok := webhook.ApplyTierUpdate(tier, nilUpdate); ok || tier.Limit() != throughput.Tier10K {
		t.Error("ApplyTierUpdate(typed nil update) changed the tier")
	}
}
