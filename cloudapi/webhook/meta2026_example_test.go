package webhook_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/throughput"
)

// Keep a number's throughput and the portfolio's tier at what Meta
// reports, and see a template's category change, with the entry's time.
func ExampleApplyThroughputUpdate() {
	number := throughput.New(throughput.Default) // in an application: client.Number(phoneNumberID)
	tier := throughput.NewTier(throughput.Tier2K)
	h, _ := webhook.NewHandler("app-secret",
		webhook.OnQuality(func(_ context.Context, ev webhook.Event, u *webhook.QualityUpdate) error {
			if mps, ok := webhook.ApplyThroughputUpdate(number, u, ev.Time); ok {
				fmt.Println("throughput", mps, "from", ev.Time.UTC().Format("2006-01-02 15:04"))
			}
			return nil
		}),
		webhook.OnCapability(func(_ context.Context, _ webhook.Event, u *webhook.CapabilityUpdate) error {
			limit, _ := webhook.ApplyTierUpdate(tier, u)
			fmt.Println("tier unlimited:", limit == throughput.Unlimited)
			return nil
		}),
		webhook.OnTemplateCategory(func(_ context.Context, _ webhook.Event, u *webhook.TemplateCategoryUpdate) error {
			fmt.Println(u.TemplateName, u.PreviousCategory, "->", u.NewCategory, "completed:", u.Completed())
			return nil
		}),
		webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
	body := `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","time":1767225600,"changes":[` +
		`{"field":"phone_number_quality_update","value":{"display_phone_number":"15550783881","event":"THROUGHPUT_UPGRADE"}},` +
		`{"field":"business_capability_update","value":{"max_daily_conversations_per_business":-1}},` +
		`{"field":"template_category_update","value":{"message_template_id":1,"message_template_name":"order_update","message_template_language":"en_US","previous_category":"UTILITY","new_category":"MARKETING"}}]}]}`
	req := httptest.NewRequest("POST", "/webhook", strings.NewReader(body))
	req.Header.Set(webhook.SignatureHeader, cloudapitest.Sign([]byte(body), "app-secret"))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Println(rec.Code, number.PerSecond())
	// Output:
	// throughput 1000 from 2026-01-01 00:00
	// tier unlimited: true
	// order_update UTILITY -> MARKETING completed: true
	// 200 1000
}
