package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/throughput"
)

// A webhook handler with typed callbacks. The second message's timestamp is
// a number where Meta documents a string, and its status carries an error
// object without a code: both are delivered, the problem is reported, and
// Meta gets a 200 instead of redelivering the batch for days.
func ExampleNewHandler() {
	h, err := webhook.NewHandler("app-secret",
		webhook.WithVerifyToken("verify-me"),
		webhook.OnMessage(func(_ context.Context, ev webhook.Event, m *webhook.Message) error {
			fmt.Printf("message %s from %s to number %s: %q\n", m.ID, m.Sender(), ev.Metadata.PhoneNumberID, m.Text.Body)
			return nil
		}),
		webhook.OnStatus(func(_ context.Context, _ webhook.Event, s *webhook.Status) error {
			fmt.Printf("status %s %s (callback data %q)\n", s.ID, s.Status, s.CallbackData)
			return nil
		}),
		webhook.OnOther(func(_ context.Context, ev webhook.Event, c *webhook.Change) error {
			fmt.Printf("other %s: %d problem(s), first: %v\n", ev.Field, len(c.Problems), c.Problems[0])
			return nil
		}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	body := `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages","value":{
	"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},
	"messages":[{"from":"237690000001","id":"wamid.A","timestamp":"1767225601","type":"text","text":{"body":"hello"}},
	            {"from_user_id":"CO.1949266959121697","id":"wamid.B","timestamp":1767225602,"type":"text","text":{"body":"hi"}}],
	"statuses":[{"id":"wamid.OUT","status":"failed","timestamp":"1767225603","recipient_id":"237690000001",
	             "biz_opaque_callback_data":"campaign-7/ada","errors":[{"title":"no code"}]}]}}]}]}`
	req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(body))
	req.Header.Set(cloudapitest.SignatureHeader, cloudapitest.Sign([]byte(body), "app-secret"))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Println("answer", rec.Code)
	// Output:
	// message wamid.A from 237690000001 to number 106540352242922: "hello"
	// message wamid.B from CO.1949266959121697 to number 106540352242922: "hi"
	// status wamid.OUT failed (callback data "campaign-7/ada")
	// other messages: 1 problem(s), first: webhook: field entry[0].changes[0].value.statuses[0].errors[0]: no error code
	// answer 200
}

// Parse a notification without the handler, for a queue consumer that
// verified the signature itself.
func ExampleParse() {
	body := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"phone_number_quality_update",
	"value":{"display_phone_number":"15550783881","event":"UPGRADE","max_daily_conversations_per_business":"TIER_10K","brand_new_key":true}}]}]}`)
	n, err := webhook.Parse(body)
	if err != nil {
		fmt.Println(err)
		return
	}
	q := n.Entry[0].Changes[0].Quality
	fmt.Println(q.Event, q.MaxDailyConversationsPerBusiness, string(q.Extra["brand_new_key"]))
	// Output:
	// UPGRADE TIER_10K true
}

// Feed the portfolio's Tier from Meta's messaging-limit webhooks.
func ExampleApplyTierUpdate() {
	tier := throughput.NewTier(throughput.Tier250)
	update := &webhook.QualityUpdate{Event: "UPGRADE", OldLimit: "TIER_250", MaxDailyConversationsPerBusiness: "TIER_2K"}
	limit, ok := webhook.ApplyTierUpdate(tier, update)
	fmt.Println(limit, ok, tier.Limit())
	_, ok = webhook.ApplyTierUpdate(tier, &webhook.QualityUpdate{Event: "FLAGGED"})
	fmt.Println(ok, tier.Limit())
	// Output:
	// 2000 true 2000
	// false 2000
}
