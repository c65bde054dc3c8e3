package webhook

import (
	"strconv"
	"strings"
	"time"

	"github.com/wapace/wapace/throughput"
)

// TierLimit reads Meta's name for a messaging limit, as
// phone_number_quality_update and business_capability_update send it
// ("TIER_250", "TIER_2K", "TIER_10K", "TIER_100K", "TIER_UNLIMITED"), as a
// [throughput.Tier] limit: the number of unique users per 24 hours, or
// [throughput.Unlimited]. A plain number ("10000") reads as itself, and
// "-1", which business_capability_update sends for a portfolio without a
// limit, reads as throughput.Unlimited. It reports false for "TIER_NOT_SET"
// and for names it cannot read.
func TierLimit(name string) (limit int, ok bool) {
	name = strings.ToUpper(strings.TrimSpace(name))
	rest, found := strings.CutPrefix(name, "TIER_")
	if !found {
		if name == "-1" {
			return throughput.Unlimited, true
		}
		if n, err := strconv.Atoi(name); err == nil && n > 0 && n <= 1_000_000_000 {
			return n, true
		}
		return 0, false
	}
	if rest == "UNLIMITED" {
		return throughput.Unlimited, true
	}
	mult := 1
	switch {
	case strings.HasSuffix(rest, "K"):
		mult, rest = 1_000, strings.TrimSuffix(rest, "K")
	case strings.HasSuffix(rest, "M"):
		mult, rest = 1_000_000, strings.TrimSuffix(rest, "M")
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n <= 0 || n > 1_000_000_000/mult {
		return 0, false
	}
	return n * mult, true
}

// TierLimit returns the portfolio's messaging limit the update reports:
// max_daily_conversations_per_business, or, from senders that predate it,
// current_limit. It reports false when the update carries neither in a form
// TierLimit reads (a quality-only event such as FLAGGED, say).
func (u *QualityUpdate) TierLimit() (limit int, ok bool) {
	if l, ok := TierLimit(u.MaxDailyConversationsPerBusiness); ok {
		return l, true
	}
	return TierLimit(u.CurrentLimit)
}

// TierLimit returns the portfolio's messaging limit the update reports, or
// false when it carries none TierLimit reads: max_daily_conversations_per_business,
// or, from payloads without it, max_daily_conversation_per_phone (which
// Meta's reference says is removed in February 2026). Meta sends -1 for
// unlimited, as a number or a string: both read as throughput.Unlimited.
func (u *CapabilityUpdate) TierLimit() (limit int, ok bool) {
	if l, ok := TierLimit(u.MaxDailyConversationsPerBusiness); ok || u.MaxDailyConversationPerPhone == 0 {
		return l, ok
	}
	return TierLimit(strconv.FormatInt(u.MaxDailyConversationPerPhone, 10))
}

// EventThroughputUpgrade is the phone_number_quality_update event Meta sends
// when a business number's throughput is upgraded (to 1,000 messages per
// second, after about a minute in which the number answers 131057).
const EventThroughputUpgrade = "THROUGHPUT_UPGRADE"

// ApplyThroughputUpdate raises l, the limiter of the number u is about, to
// throughput.Upgraded (1,000 messages per second) at t when u reports a
// throughput upgrade (Event THROUGHPUT_UPGRADE), and returns the rate it
// set. It changes nothing and reports false for any other event, or a nil
// l or u. The update names the number by its display number only: pick the
// limiter of the phone number ID you send from (Client.Number), for
// example by the Event's Metadata or your own table:
//
//	webhook.OnQuality(func(_ context.Context, ev webhook.Event, u *webhook.QualityUpdate) error {
//		webhook.ApplyThroughputUpdate(client.Number(numberIDOf(u.DisplayPhoneNumber)), u, ev.Time)
//		webhook.ApplyTierUpdate(tier, u)
//		return nil
//	})
//
// t is when the upgrade took effect: the Event's Time, or your clock's Now
// when the entry carries no time. A zero t changes nothing and reports
// false.
func ApplyThroughputUpdate(l *throughput.Limiter, u *QualityUpdate, t time.Time) (mps int, ok bool) {
	if l == nil || u == nil || t.IsZero() || !strings.EqualFold(strings.TrimSpace(u.Event), EventThroughputUpgrade) {
		return 0, false
	}
	l.SetMPSAt(t, throughput.Upgraded)
	return throughput.Upgraded, true
}

// TierUpdate is a webhook value that reports the business portfolio's
// messaging limit: *QualityUpdate (phone_number_quality_update) and
// *CapabilityUpdate (business_capability_update).
type TierUpdate interface {
	TierLimit() (limit int, ok bool)
}

// ApplyTierUpdate sets t's limit to the messaging limit u reports, keeping
// the recipients t already counts, and returns the limit applied. It
// changes nothing and reports false when u carries no limit it can read (a
// quality-only event such as FLAGGED, or TIER_NOT_SET). Wire it in the
// handler:
//
//	webhook.OnQuality(func(_ context.Context, _ webhook.Event, u *webhook.QualityUpdate) error {
//		webhook.ApplyTierUpdate(tier, u)
//		return nil
//	})
//
// and likewise in OnCapability. A nil t or u changes nothing.
func ApplyTierUpdate(t *throughput.Tier, u TierUpdate) (limit int, ok bool) {
	if t == nil || u == nil || isNilUpdate(u) {
		return 0, false
	}
	limit, ok = u.TierLimit()
	if !ok {
		return 0, false
	}
	t.SetLimit(limit)
	return limit, true
}

// isNilUpdate reports whether u is a typed nil, which would panic in
// TierLimit.
func isNilUpdate(u TierUpdate) bool {
	switch v := u.(type) {
	case *QualityUpdate:
		return v == nil
	case *CapabilityUpdate:
		return v == nil
	}
	return false
}
