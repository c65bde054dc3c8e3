package cloudapi_test

import (
	"testing"

	"github.com/wapace/wapace/cloudapi"
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
		if l, ok := cloudapi.TierLimit(tt.name); l != tt.limit || ok != tt.ok {
			t.Errorf("TierLimit(%q) = %d, %v; want %d, %v", tt.name, l, ok, tt.limit, tt.ok)
		}
	}
	u := cloudapi.QualityUpdate{Event: "UPGRADE", CurrentLimit: "TIER_1K", MaxDailyConversationsPerBusiness: "TIER_10K"}
	if l, ok := u.TierLimit(); l != throughput.Tier10K || !ok {
		t.Errorf("portfolio limit wins: %d, %v", l, ok)
	}
	u = cloudapi.QualityUpdate{Event: "DOWNGRADE", CurrentLimit: "TIER_250"}
	if l, ok := u.TierLimit(); l != throughput.Tier250 || !ok {
		t.Errorf("current_limit fallback: %d, %v", l, ok)
	}
	u = cloudapi.QualityUpdate{Event: "FLAGGED"}
	if _, ok := u.TierLimit(); ok {
		t.Error("a quality-only event reported a limit")
	}
	c := cloudapi.CapabilityUpdate{MaxDailyConversationsPerBusiness: "TIER_100K"}
	if l, ok := c.TierLimit(); l != throughput.Tier100K || !ok {
		t.Errorf("capability limit: %d, %v", l, ok)
	}
}

func FuzzTierLimit(f *testing.F) {
	for _, s := range []string{"TIER_2K", "TIER_UNLIMITED", "TIER_NOT_SET", "TIER_1M", "TIER_9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, ok := cloudapi.TierLimit(s)
		if ok && l != throughput.Unlimited && (l <= 0 || l > 1_000_000_000) {
			t.Fatalf("TierLimit(%q) = %d", s, l)
		}
		if !ok && l != 0 {
			t.Fatalf("TierLimit(%q) = %d, false", s, l)
		}
	})
}
