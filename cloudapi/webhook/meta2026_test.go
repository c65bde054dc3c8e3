package webhook_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/throughput"
)

// TestTierLimitMinusOne: business_capability_update sends -1 for a
// portfolio without a messaging limit, as a number or a string.
func TestTierLimitMinusOne(t *testing.T) {
	t.Parallel()
	if l, ok := webhook.TierLimit("-1"); l != throughput.Unlimited || !ok {
		t.Errorf(`TierLimit("-1") = %d, %v`, l, ok)
	}
	for _, body := range []string{
		`{"object":"whatsapp_business_account","entry":[{"id":"1","time":1767225600,"changes":[{"field":"business_capability_update","value":{"max_daily_conversations_per_business":-1}}]}]}`,
		`{"object":"whatsapp_business_account","entry":[{"id":"1","time":1767225600,"changes":[{"field":"business_capability_update","value":{"max_daily_conversations_per_business":"-1"}}]}]}`,
	} {
		n, err := webhook.Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		u := n.Entry[0].Changes[0].Capability
		tier := throughput.NewTier(throughput.Tier2K)
		if l, ok := webhook.ApplyTierUpdate(tier, u); l != throughput.Unlimited || !ok || tier.Limit() != throughput.Unlimited {
			t.Errorf("%s: applied %d, %v; tier %d", body, l, ok, tier.Limit())
		}
	}
}

// TestEventTime: entry[].time reaches every callback as Event.Time, in
// seconds as Meta documents it and in milliseconds as some senders send
// it; an entry without one gives the zero Time.
func TestEventTime(t *testing.T) {
	t.Parallel()
	want := time.Unix(1767225600, 0)
	for _, tc := range []struct {
		name, entryTime string
		want            time.Time
	}{
		{"seconds", `"time":1767225600,`, want},
		{"quoted seconds", `"time":"1767225600",`, want},
		{"milliseconds", `"time":1767225600000,`, want},
		{"none", ``, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []time.Time
			record := func(ev webhook.Event) { got = append(got, ev.Time) }
			h := newHandler(t,
				webhook.OnMessage(func(_ context.Context, ev webhook.Event, _ *webhook.Message) error { record(ev); return nil }),
				webhook.OnStatus(func(_ context.Context, ev webhook.Event, _ *webhook.Status) error { record(ev); return nil }),
				webhook.OnTemplateStatus(func(_ context.Context, ev webhook.Event, _ *webhook.TemplateStatusUpdate) error {
					record(ev)
					return nil
				}),
				webhook.OnQuality(func(_ context.Context, ev webhook.Event, _ *webhook.QualityUpdate) error { record(ev); return nil }),
				webhook.OnCapability(func(_ context.Context, ev webhook.Event, _ *webhook.CapabilityUpdate) error { record(ev); return nil }),
				webhook.OnTemplateCategory(func(_ context.Context, ev webhook.Event, _ *webhook.TemplateCategoryUpdate) error {
					record(ev)
					return nil
				}),
				webhook.OnOther(func(_ context.Context, ev webhook.Event, _ *webhook.Change) error { record(ev); return nil }),
			)
			body := `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398",` + tc.entryTime + `"changes":[` +
				`{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"1"},` +
				`"messages":[{"from":"237690000001","id":"wamid.T` + tc.name + `","timestamp":"1767225600","type":"text","text":{"body":"hi"}}],` +
				`"statuses":[{"id":"wamid.S` + tc.name + `","status":"delivered","timestamp":"1767225600","recipient_id":"237690000001"}]}},` +
				`{"field":"message_template_status_update","value":{"event":"APPROVED","message_template_id":1}},` +
				`{"field":"phone_number_quality_update","value":{"event":"UPGRADE","max_daily_conversations_per_business":"TIER_10K"}},` +
				`{"field":"business_capability_update","value":{"max_daily_conversations_per_business":"TIER_10K"}},` +
				`{"field":"template_category_update","value":{"message_template_id":7,"message_template_name":"promo","message_template_language":"en_US","previous_category":"UTILITY","new_category":"MARKETING"}},` +
				`{"field":"account_alerts","value":{"x":1}}]}]}`
			if code := post(t, h, body); code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			if len(got) != 7 {
				t.Fatalf("%d callbacks, want 7", len(got))
			}
			for i, g := range got {
				if !g.Equal(tc.want) {
					t.Errorf("callback %d: Event.Time = %v, want %v", i, g, tc.want)
				}
			}
		})
	}
}

// TestTemplateCategoryUpdate decodes both shapes of Meta's
// template_category_update reference and delivers them typed.
func TestTemplateCategoryUpdate(t *testing.T) {
	t.Parallel()
	var got []*webhook.TemplateCategoryUpdate
	h := newHandler(t,
		webhook.OnTemplateCategory(func(_ context.Context, ev webhook.Event, u *webhook.TemplateCategoryUpdate) error {
			if ev.WABAID != "102290129340398" || ev.Field != webhook.FieldTemplateCategory {
				t.Errorf("event %+v", ev)
			}
			got = append(got, u)
			return nil
		}),
		webhook.OnOther(func(_ context.Context, _ webhook.Event, c *webhook.Change) error {
			t.Errorf("OnOther got %s", c.Field)
			return nil
		}),
	)
	body := `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","time":1767225600,"changes":[` +
		`{"field":"template_category_update","value":{"message_template_id":1432658294580282,"message_template_name":"order_update","message_template_language":"en_US","correct_category":"MARKETING","new_category":"UTILITY","category_update_timestamp":1767830400}},` +
		`{"field":"template_category_update","value":{"message_template_id":1432658294580282,"message_template_name":"order_update","message_template_language":"en_US","previous_category":"UTILITY","new_category":"MARKETING"}}]}]}`
	if code := post(t, h, body); code != http.StatusOK || len(got) != 2 {
		t.Fatalf("status %d, %d updates", code, len(got))
	}
	imp, done := got[0], got[1]
	if !imp.Impending() || imp.Completed() || imp.CorrectCategory != "MARKETING" || imp.NewCategory != "UTILITY" || imp.CategoryUpdateTimestamp != 1767830400 || imp.TemplateID != "1432658294580282" {
		t.Errorf("impending %+v", imp)
	}
	if done.Impending() || !done.Completed() || done.PreviousCategory != "UTILITY" || done.NewCategory != "MARKETING" || done.TemplateName != "order_update" || done.TemplateLanguage != "en_US" {
		t.Errorf("completed %+v", done)
	}
}

// TestApplyThroughputUpdate: the throughput upgrade raises the number's
// limiter to 1,000 messages per second; other events change nothing.
func TestApplyThroughputUpdate(t *testing.T) {
	t.Parallel()
	clk := clock.NewMock()
	l := throughput.New(throughput.Default, throughput.WithClock(clk))
	for _, u := range []*webhook.QualityUpdate{nil, {Event: "UPGRADE", MaxDailyConversationsPerBusiness: "TIER_10K"}, {Event: "FLAGGED"}} {
		if _, ok := webhook.ApplyThroughputUpdate(l, u, clk.Now()); ok || l.PerSecond() != throughput.Default {
			t.Errorf("ApplyThroughputUpdate(%+v) changed the rate to %d", u, l.PerSecond())
		}
	}
	up := &webhook.QualityUpdate{Event: "THROUGHPUT_UPGRADE"}
	if _, ok := webhook.ApplyThroughputUpdate(l, up, time.Time{}); ok {
		t.Error("a zero instant applied")
	}
	if _, ok := webhook.ApplyThroughputUpdate(nil, up, clk.Now()); ok {
		t.Error("a nil limiter applied")
	}
	if mps, ok := webhook.ApplyThroughputUpdate(l, up, clk.Now()); !ok || mps != throughput.Upgraded || l.PerSecond() != throughput.Upgraded {
		t.Errorf("upgrade: %d, %v, limiter %d", mps, ok, l.PerSecond())
	}
	// The new rate admits far more than 80 messages in a second.
	at := clk.Now().Add(time.Second)
	n := 0
	for range 1000 {
		for l.AllowN(at, 1) {
			n++
		}
		at = at.Add(time.Millisecond)
	}
	if n <= throughput.Default {
		t.Errorf("only %d messages admitted after the upgrade", n)
	}
}

// TestCapabilityUpdateMetaExamples reads the business_capability_update
// reference's own payload example (entry time 1739321024, the limit as a
// bare number) and its per-phone field, whose -1 Meta documents as
// unlimited: the entry's time reaches the callback and the limit reaches
// the tier.
func TestCapabilityUpdateMetaExamples(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, value string
		want        int
	}{
		{"reference example", `{"max_daily_conversations_per_business":2000,"max_phone_numbers_per_waba":25}`, 2000},
		{"TIER_UNLIMITED", `{"max_daily_conversations_per_business":"TIER_UNLIMITED","max_phone_numbers_per_waba":25}`, throughput.Unlimited},
		{"per-phone -1 only", `{"max_daily_conversation_per_phone":-1,"max_phone_numbers_per_waba":25}`, throughput.Unlimited},
		{"per-phone 250 only", `{"max_daily_conversation_per_phone":250,"max_phone_numbers_per_business":2}`, 250},
		{"per-business wins", `{"max_daily_conversation_per_phone":250,"max_daily_conversations_per_business":"TIER_10K"}`, 10000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := `{"entry":[{"id":"524126980791429","time":1739321024,"changes":[{"value":` + tc.value +
				`,"field":"business_capability_update"}]}],"object":"whatsapp_business_account"}`
			tier := throughput.NewTier(throughput.Tier100K) // every case changes it
			var at time.Time
			h := newHandler(t,
				webhook.OnCapability(func(_ context.Context, ev webhook.Event, u *webhook.CapabilityUpdate) error {
					at = ev.Time
					webhook.ApplyTierUpdate(tier, u)
					return nil
				}),
				webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
			if code := post(t, h, body); code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			if !at.Equal(time.Unix(1739321024, 0)) {
				t.Errorf("Event.Time = %v", at)
			}
			if tier.Limit() != tc.want {
				t.Errorf("tier limit %d, want %d", tier.Limit(), tc.want)
			}
		})
	}
}
