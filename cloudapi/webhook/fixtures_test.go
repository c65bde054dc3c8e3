package webhook_test

// Webhook payloads written for these tests after the shapes in Meta's
// webhooks reference pages (messages, statuses, user_preferences,
// phone_number_quality_update, message_template_status_update,
// account_update, ...) and the variants other clients' public fixtures show
// (numeric timestamps, BSUID-only users, forwarded contexts). The values are
// invented; no fixture is copied.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/errcodes"
)

// envelope wraps one change of field with value into a notification.
func envelope(field, value string) string {
	return `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","time":1767225600,"changes":[{"field":"` +
		field + `","value":` + value + `}]}]}`
}

// messagesValue is a messages value with the given inner members.
func messagesValue(members string) string {
	v := `{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"}`
	if members != "" {
		v += "," + members
	}
	return v + "}"
}

const (
	fxText         = `{"from":"237690000001","id":"wamid.TEXT","timestamp":"1767225601","type":"text","text":{"body":"hello"}}`
	fxBSUIDContact = `"contacts":[{"profile":{"name":"Ada","username":"@ada"},"user_id":"CO.1949266959121697","parent_user_id":"CO.ENT.99"}],` +
		`"messages":[{"from_user_id":"CO.1949266959121697","from_parent_user_id":"CO.ENT.99","id":"wamid.BSUID","timestamp":"1767225602","type":"text","text":{"body":"hi"}}]`
	fxForwarded    = `{"from":"237690000001","id":"wamid.FWD","timestamp":"1767225603","type":"text","text":{"body":"look"},"context":{"forwarded":true,"frequently_forwarded":true}}`
	fxReply        = `{"from":"237690000001","id":"wamid.REPLY","timestamp":"1767225604","type":"text","text":{"body":"yes"},"context":{"from":"15550783881","id":"wamid.ORIG"}}`
	fxImage        = `{"from":"237690000001","id":"wamid.IMG","timestamp":"1767225605","type":"image","image":{"id":"1479537139650973","mime_type":"image/jpeg","sha256":"abc=","caption":"receipt"}}`
	fxVoice        = `{"from":"237690000001","id":"wamid.VOICE","timestamp":"1767225606","type":"audio","audio":{"id":"2","mime_type":"audio/ogg; codecs=opus","voice":true}}`
	fxLocation     = `{"from":"237690000001","id":"wamid.LOC","timestamp":"1767225607","type":"location","location":{"latitude":3.848,"longitude":11.502,"name":"Poste centrale","address":"Yaoundé"}}`
	fxButton       = `{"from":"237690000001","id":"wamid.BTN","timestamp":"1767225608","type":"button","context":{"from":"15550783881","id":"wamid.TPL"},"button":{"payload":"STOP_PROMOS","text":"Stop promotions"}}`
	fxListReply    = `{"from":"237690000001","id":"wamid.LIST","timestamp":"1767225609","type":"interactive","interactive":{"type":"list_reply","list_reply":{"id":"row-2","title":"Tuesday","description":"9 to 12"}}}`
	fxFlow         = `{"from":"237690000001","id":"wamid.FLOW","timestamp":"1767225610","type":"interactive","interactive":{"type":"nfm_reply","nfm_reply":{"name":"flow","body":"Sent","response_json":"{\"flow_token\":\"t\"}"}}}`
	fxReferral     = `{"from":"237690000001","id":"wamid.AD","timestamp":"1767225611","type":"text","text":{"body":"info?"},"referral":{"source_url":"https://fb.me/x","source_id":"120","source_type":"ad","headline":"Sale","body":"Now","media_type":"image","image_url":"https://x/i.jpg","ctwa_clid":"ARA1"}}`
	fxOrder        = `{"from":"237690000001","id":"wamid.ORDER","timestamp":"1767225612","type":"order","order":{"catalog_id":"777","text":"for friday","product_items":[{"product_retailer_id":"sku-1","quantity":2,"item_price":12.5,"currency":"EUR"},{"product_retailer_id":"sku-2","quantity":"1","item_price":"3","currency":"EUR"}]}}`
	fxGroup        = `{"from":"237690000001","group_id":"120363000000000001","id":"wamid.GRP","timestamp":"1767225613","type":"text","text":{"body":"team"}}`
	fxUnsupported  = `{"from":"237690000001","id":"wamid.UNS","timestamp":"1767225614","type":"unsupported","errors":[{"code":131051,"title":"Message type unknown","message":"Message type unknown","details":"Message type is currently not supported."}],"unsupported":{"type":"edit"}}`
	fxSystem       = `{"from":"237690000001","id":"wamid.SYS","timestamp":"1767225615","type":"system","system":{"body":"User A changed from 237690000001 to 237690000009","new_wa_id":"237690000009","type":"user_changed_number"}}`
	fxStatusRead   = `{"id":"wamid.OUT1","status":"read","timestamp":"1767225700","recipient_id":"237690000001","recipient_user_id":"CO.1949266959121697","parent_recipient_user_id":"CO.ENT.99","recipient_type":"individual","biz_opaque_callback_data":"campaign-7/ada"}`
	fxStatusPlayed = `{"id":"wamid.OUT2","status":"played","timestamp":"1767225701","recipient_id":"237690000001"}`
	fxStatusSent   = `{"id":"wamid.OUT3","status":"sent","timestamp":"1767225702","recipient_id":"237690000001","conversation":{"id":"c1","expiration_timestamp":"1767312000","origin":{"type":"marketing"}},"pricing":{"billable":true,"pricing_model":"PMP","category":"marketing","type":"regular"}}`
	fxStatusGroup  = `{"id":"wamid.OUT4","status":"delivered","timestamp":"1767225703","recipient_id":"120363000000000001","recipient_type":"group","recipient_participant_id":"237690000002"}`
	fxStatusCall   = `{"id":"wacid.CALL","status":"RINGING","timestamp":"1767225704","recipient_id":"237690000001","type":"call"}`
	fxStatusFailed = `{"id":"wamid.OUT5","status":"failed","timestamp":"1767225705","recipient_id":"237690000001","errors":[{"code":131049,"title":"This message was not delivered to maintain healthy ecosystem engagement.","message":"This message was not delivered to maintain healthy ecosystem engagement.","error_data":{"details":"In order to maintain healthy ecosystem engagement, the message failed to be delivered."},"href":"https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/"}]}`
)

// allMessages is a notification carrying every message and status shape
// above.
var allMessages = envelope("messages", messagesValue(`"contacts":[{"profile":{"name":"Ada"},"wa_id":"237690000001"}],"messages":[`+
	strings.Join([]string{fxText, fxForwarded, fxReply, fxImage, fxVoice, fxLocation, fxButton, fxListReply, fxFlow, fxReferral, fxOrder, fxGroup, fxUnsupported, fxSystem}, ",")+
	`],"statuses":[`+strings.Join([]string{fxStatusRead, fxStatusPlayed, fxStatusSent, fxStatusGroup, fxStatusCall, fxStatusFailed}, ",")+`]`))

// otherFields lists a value per webhook field beyond messages: each must
// reach the application.
var otherFields = map[string]string{
	"message_template_status_update":  `{"event":"APPROVED","message_template_id":1234567890,"message_template_name":"spring_sale","message_template_language":"en_US","reason":"NONE","message_template_category":"MARKETING"}`,
	"phone_number_quality_update":     `{"display_phone_number":"15550783881","event":"UPGRADE","old_limit":"TIER_250","current_limit":"TIER_2K","max_daily_conversations_per_business":"TIER_2K"}`,
	"account_update":                  `{"phone_number":"15550783881","event":"ACCOUNT_VIOLATION","violation_info":{"violation_type":"SCAM"}}`,
	"user_preferences":                messagesValue(`"contacts":[{"profile":{"name":"Ada"},"wa_id":"237690000001"}],"user_preferences":[{"wa_id":"237690000001","detail":"User requested to stop marketing messages","category":"marketing_messages","value":"stop","timestamp":1767225800}]`),
	"smb_message_echoes":              messagesValue(`"message_echoes":[{"from":"15550783881","to":"237690000001","id":"wamid.ECHO","timestamp":"1767225801","type":"text","text":{"body":"sent from the app"}}]`),
	"history":                         messagesValue(`"history":[{"metadata":{"phase":0,"chunk_order":1,"progress":10},"threads":[]}]`),
	"calls":                           messagesValue(`"calls":[{"id":"wacid.1","from":"237690000001","to":"15550783881","event":"connect","timestamp":"1767225802","direction":"USER_INITIATED"}]`),
	"account_alerts":                  `{"entity_type":"WABA","entity_id":"102290129340398","alert_info":{"alert_severity":"WARNING","alert_status":"ACTIVE","alert_type":"OBA_APPROVED"}}`,
	"account_review_update":           `{"decision":"APPROVED"}`,
	"business_capability_update":      `{"max_daily_conversations_per_business":"TIER_10K","max_phone_numbers_per_business":20}`,
	"phone_number_name_update":        `{"display_phone_number":"15550783881","decision":"APPROVED","requested_verified_name":"Wapace"}`,
	"security":                        `{"display_phone_number":"15550783881","event":"PIN_CHANGED"}`,
	"message_template_quality_update": `{"previous_quality_score":"GREEN","new_quality_score":"YELLOW","message_template_id":1234567890,"message_template_name":"spring_sale","message_template_language":"en_US"}`,
	"group_lifecycle_update":          messagesValue(`"groups":[{"timestamp":"1767225803","group_id":"120363000000000001","type":"group_create","request_id":"r1"}]`),
	"partner_solutions":               `{"event":"SOLUTION_CREATED","solution_id":"5","solution_status":"ACTIVE"}`,
	"template_category_update":        `{"message_template_id":1432658294580282,"message_template_name":"order_update","message_template_language":"en_US","previous_category":"UTILITY","new_category":"MARKETING"}`,
	"some_field_from_2027":            `{"anything":[1,2,3]}`,
}

// recorder collects what the typed callbacks and OnOther receive.
type recorder struct {
	mu        sync.Mutex
	messages  []webhook.Message
	events    []webhook.Event
	statuses  []webhook.Status
	errs      [][]errcodes.Error
	templates []webhook.TemplateStatusUpdate
	quality   []webhook.QualityUpdate
	capab     []webhook.CapabilityUpdate
	other     []string // fields
	changes   []webhook.Change
}

func (r *recorder) options() []webhook.Option {
	return []webhook.Option{
		webhook.OnMessage(func(_ context.Context, ev webhook.Event, m *webhook.Message) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.messages = append(r.messages, *m)
			r.events = append(r.events, ev)
			return nil
		}),
		webhook.OnStatus(func(_ context.Context, _ webhook.Event, s *webhook.Status) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.statuses = append(r.statuses, *s)
			return nil
		}),
		webhook.OnErrors(func(_ context.Context, _ webhook.Event, e []errcodes.Error) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.errs = append(r.errs, e)
			return nil
		}),
		webhook.OnTemplateStatus(func(_ context.Context, _ webhook.Event, u *webhook.TemplateStatusUpdate) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.templates = append(r.templates, *u)
			return nil
		}),
		webhook.OnQuality(func(_ context.Context, _ webhook.Event, u *webhook.QualityUpdate) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.quality = append(r.quality, *u)
			return nil
		}),
		webhook.OnCapability(func(_ context.Context, _ webhook.Event, u *webhook.CapabilityUpdate) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.capab = append(r.capab, *u)
			return nil
		}),
		webhook.OnOther(func(_ context.Context, ev webhook.Event, c *webhook.Change) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.other = append(r.other, ev.Field)
			r.changes = append(r.changes, *c)
			return nil
		}),
	}
}

func (r *recorder) message(id string) *webhook.Message {
	for i := range r.messages {
		if r.messages[i].ID == id {
			return &r.messages[i]
		}
	}
	return nil
}

func (r *recorder) status(id string) *webhook.Status {
	for i := range r.statuses {
		if r.statuses[i].ID == id {
			return &r.statuses[i]
		}
	}
	return nil
}

// TestEveryFieldReachesTheApplication: issue 12 section 2 and issue
// 16: template status, quality, account updates and a dozen other fields
// were answered 200 and dropped. Each must reach a callback exactly once,
// typed where common and raw otherwise, unknown fields included.
func TestEveryFieldReachesTheApplication(t *testing.T) {
	t.Parallel()
	for field, value := range otherFields {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			var r recorder
			h := newHandler(t, r.options()...)
			if code := post(t, h, envelope(field, value)); code != http.StatusOK {
				t.Fatalf("POST = %d", code)
			}
			seen := len(r.templates) + len(r.quality) + len(r.capab) + len(r.other)
			if seen != 1 {
				t.Fatalf("field %s reached %d callbacks (templates %d, quality %d, capability %d, other %v), want 1", field, seen, len(r.templates), len(r.quality), len(r.capab), r.other)
			}
			switch field {
			case webhook.FieldTemplateStatus:
				if u := r.templates[0]; u.Event != "APPROVED" || u.TemplateID != "1234567890" || u.TemplateName != "spring_sale" {
					t.Errorf("template update %+v", u)
				}
			case webhook.FieldQuality:
				if u := r.quality[0]; u.Event != "UPGRADE" || u.MaxDailyConversationsPerBusiness != "TIER_2K" || u.OldLimit != "TIER_250" {
					t.Errorf("quality update %+v", u)
				}
			case webhook.FieldCapability:
				if u := r.capab[0]; u.MaxDailyConversationsPerBusiness != "TIER_10K" || u.MaxPhoneNumbersPerBusiness != 20 {
					t.Errorf("capability update %+v", u)
				}
			default:
				c := r.changes[0]
				if c.Field != field || !json.Valid(c.Raw) || len(c.Raw) == 0 {
					t.Errorf("other change %q with raw %q", c.Field, c.Raw)
				}
			}
			// Meta's redelivery is dropped.
			if code := post(t, h, envelope(field, value)); code != http.StatusOK || len(r.templates)+len(r.quality)+len(r.capab)+len(r.other) != 1 {
				t.Errorf("redelivery: %d, seen %d times", code, len(r.templates)+len(r.quality)+len(r.capab)+len(r.other))
			}
		})
	}
}

func TestUserPreferencesAndAccountUpdate(t *testing.T) {
	t.Parallel()
	n, err := webhook.Parse([]byte(envelope("user_preferences", otherFields["user_preferences"])))
	if err != nil {
		t.Fatal(err)
	}
	p := n.Entry[0].Changes[0].Value.UserPreferences
	if len(p) != 1 || p[0].Category != "marketing_messages" || p[0].Value != "stop" || p[0].WaID != "237690000001" || p[0].Timestamp != "1767225800" {
		t.Errorf("user preferences %+v", p)
	}
	n, err = webhook.Parse([]byte(envelope("account_update", otherFields["account_update"])))
	if err != nil {
		t.Fatal(err)
	}
	a := n.Entry[0].Changes[0].Account
	if a == nil || a.Event != "ACCOUNT_VIOLATION" || a.PhoneNumber != "15550783881" || a.Extra["violation_info"] == nil {
		t.Errorf("account update %+v", a)
	}
}

// TestTypedCallbacks: messages and statuses reach their typed
// callbacks with the business number and the sender's contact.
func TestTypedCallbacks(t *testing.T) {
	t.Parallel()
	var r recorder
	h := newHandler(t, r.options()...)
	if code := post(t, h, allMessages); code != http.StatusOK {
		t.Fatalf("POST = %d", code)
	}
	if len(r.messages) != 14 || len(r.statuses) != 6 {
		t.Fatalf("got %d messages and %d statuses, want 14 and 6", len(r.messages), len(r.statuses))
	}
	if len(r.other) != 0 {
		t.Errorf("a fully typed messages change also went to OnOther: %v", r.other)
	}
	ev := r.events[0]
	if ev.WABAID != "102290129340398" || ev.Field != "messages" || ev.Metadata.PhoneNumberID != "106540352242922" {
		t.Errorf("event %+v", ev)
	}
	if c := ev.Contact(&r.messages[0]); c == nil || c.Profile.Name != "Ada" {
		t.Errorf("Contact(first message) = %+v", c)
	}
	if s := r.status("wamid.OUT2"); s == nil || s.Status != "played" {
		t.Errorf("played status %+v", s)
	}
	if s := r.status("wacid.CALL"); s == nil || s.Type != "call" || s.Status != "RINGING" {
		t.Errorf("call status %+v: its type must survive", s)
	}
	f := r.status("wamid.OUT5")
	if f == nil || len(f.Errors) != 1 || !errors.Is(&f.Errors[0], errcodes.MarketingLimit) {
		t.Errorf("failed status %+v", f)
	}
}

// TestUnclaimedPartsGoToOther: a messages change with statuses but
// no OnStatus callback is handed to OnOther, never acknowledged unseen.
func TestUnclaimedPartsGoToOther(t *testing.T) {
	t.Parallel()
	var msgs, other int
	h := newHandler(t,
		webhook.OnMessage(func(context.Context, webhook.Event, *webhook.Message) error { msgs++; return nil }),
		webhook.OnOther(func(_ context.Context, _ webhook.Event, c *webhook.Change) error {
			other++
			if len(c.Value.Statuses) != 6 {
				t.Errorf("OnOther got %d statuses, want 6", len(c.Value.Statuses))
			}
			return nil
		}))
	if code := post(t, h, allMessages); code != http.StatusOK || msgs != 14 || other != 1 {
		t.Errorf("POST = %d, %d messages, %d other; want 200, 14, 1", code, msgs, other)
	}
}

// TestKeysKept: issue 16's keys that wave 1 dropped, and issue 12's
// BSUID keys.
func TestKeysKept(t *testing.T) {
	t.Parallel()
	body := `{"object":"whatsapp_business_account","entry":[{"id":"1","time":1767225600,"changes":[{"field":"messages","value":` +
		messagesValue(fxBSUIDContact+`,"statuses":[`+fxStatusRead+`,`+fxStatusGroup+`]`) + `}]},` +
		`{"id":"2","changes":[{"field":"messages","value":` + messagesValue(`"messages":[`+fxGroup+`,`+fxUnsupported+`]`) + `}]}]}`
	n, err := webhook.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Problems) != 0 {
		t.Fatalf("problems: %v", n.Problems)
	}
	if n.Entry[0].Time != 1767225600 {
		t.Errorf("entry time %d", n.Entry[0].Time)
	}
	v := n.Entry[0].Changes[0].Value
	c := v.Contacts[0]
	if c.UserID != "CO.1949266959121697" || c.ParentUserID != "CO.ENT.99" || c.Profile.Username != "@ada" || c.WaID != "" {
		t.Errorf("contact %+v", c)
	}
	m := v.Messages[0]
	if m.From != "" || m.FromUserID != "CO.1949266959121697" || m.FromParentUserID != "CO.ENT.99" || m.Sender() != "CO.1949266959121697" {
		t.Errorf("BSUID message %+v", m)
	}
	s := v.Statuses[0]
	if s.RecipientUserID != "CO.1949266959121697" || s.ParentRecipientUserID != "CO.ENT.99" || s.RecipientType != "individual" {
		t.Errorf("status %+v", s)
	}
	if g := v.Statuses[1]; g.RecipientType != "group" || g.RecipientParticipantID != "237690000002" {
		t.Errorf("group status %+v", g)
	}
	v2 := n.Entry[1].Changes[0].Value
	if v2.Messages[0].GroupID != "120363000000000001" {
		t.Errorf("group id %q", v2.Messages[0].GroupID)
	}
	u := v2.Messages[1]
	if len(u.Errors) != 1 || u.Errors[0].Details != "Message type is currently not supported." {
		t.Errorf("top-level details of a message error: %+v", u.Errors)
	}
	if string(u.Extra["unsupported"]) != `{"type":"edit"}` {
		t.Errorf("unknown member not kept: %s", u.Extra["unsupported"])
	}
}

// TestMessageAccessors: media, location, interactive, button, referral and
// order content is typed; forwarded context is not a reply.
func TestMessageAccessors(t *testing.T) {
	t.Parallel()
	var r recorder
	h := newHandler(t, r.options()...)
	if code := post(t, h, allMessages); code != http.StatusOK {
		t.Fatalf("POST = %d", code)
	}
	tests := []struct {
		id   string
		ok   func(m *webhook.Message) bool
		what string
	}{
		{"wamid.TEXT", func(m *webhook.Message) bool {
			return m.Text.Body == "hello" && m.ReplyTo() == "" && m.Media() == nil
		}, "text"},
		{"wamid.FWD", func(m *webhook.Message) bool {
			return m.ReplyTo() == "" && m.Context.Forwarded && m.Context.FrequentlyForwarded
		}, "forwarded is not a reply"},
		{"wamid.REPLY", func(m *webhook.Message) bool { return m.ReplyTo() == "wamid.ORIG" && !m.Context.Forwarded }, "reply"},
		{"wamid.IMG", func(m *webhook.Message) bool {
			md := m.Media()
			return md != nil && md == m.Image && md.ID == "1479537139650973" && md.MimeType == "image/jpeg" && md.Caption == "receipt"
		}, "image"},
		{"wamid.VOICE", func(m *webhook.Message) bool { return m.Media() == m.Audio && m.Audio.Voice }, "voice note"},
		{"wamid.LOC", func(m *webhook.Message) bool {
			return m.Location.Latitude == 3.848 && m.Location.Longitude == 11.502 && m.Location.Name == "Poste centrale"
		}, "location"},
		{"wamid.BTN", func(m *webhook.Message) bool {
			return m.Button.Payload == "STOP_PROMOS" && m.ReplyTo() == "wamid.TPL"
		}, "button"},
		{"wamid.LIST", func(m *webhook.Message) bool {
			return m.Interactive.Type == "list_reply" && m.Interactive.ListReply.ID == "row-2" && m.Interactive.ListReply.Description == "9 to 12"
		}, "list reply"},
		{"wamid.FLOW", func(m *webhook.Message) bool {
			return m.Interactive.NFMReply != nil && m.Interactive.NFMReply.ResponseJSON == `{"flow_token":"t"}`
		}, "flow reply"},
		{"wamid.AD", func(m *webhook.Message) bool {
			return m.Referral.SourceType == "ad" && m.Referral.CtwaClid == "ARA1" && m.Text.Body == "info?"
		}, "referral"},
		{"wamid.ORDER", func(m *webhook.Message) bool {
			o := m.Order
			return o.CatalogID == "777" && len(o.ProductItems) == 2 && o.ProductItems[0].Quantity == 2 && o.ProductItems[0].ItemPrice == 12.5 &&
				o.ProductItems[1].Quantity == 1 && o.ProductItems[1].ItemPrice == 3
		}, "order (numbers as strings too)"},
		{"wamid.SYS", func(m *webhook.Message) bool {
			return m.System.Type == "user_changed_number" && m.System.NewWaID == "237690000009"
		}, "system"},
	}
	for _, tt := range tests {
		m := r.message(tt.id)
		if m == nil || !tt.ok(m) {
			t.Errorf("%s (%s): %+v", tt.what, tt.id, m)
		}
	}
}

// TestLenientDecoding: issue 16 point 1 and issue 11 item 7. One
// field of the wrong type, or one malformed error object, once made the
// handler answer 400 for the whole signed batch, which Meta redelivered for
// days. Now the batch is answered 200, every item is delivered with what
// could be decoded, and the problem names the field.
func TestLenientDecoding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		value    string
		messages []string // IDs delivered
		statuses []string // IDs delivered
		problems []string // paths reported
		check    func(t *testing.T, r *recorder)
	}{
		{
			name:     "numeric message timestamp",
			value:    messagesValue(`"messages":[{"from":"237690000001","id":"wamid.N","timestamp":1767225601,"type":"text","text":{"body":"x"}},` + fxText + `]`),
			messages: []string{"wamid.N", "wamid.TEXT"},
			check: func(t *testing.T, r *recorder) {
				if ts := r.message("wamid.N").Timestamp; ts != "1767225601" {
					t.Errorf("timestamp %q", ts)
				}
			},
		},
		{
			name:     "numeric conversation expiration",
			value:    messagesValue(`"statuses":[{"id":"wamid.S","status":"sent","timestamp":"1","recipient_id":"237690000001","conversation":{"id":"c","expiration_timestamp":1767312000,"origin":{"type":"service"}}}]`),
			statuses: []string{"wamid.S"},
			check: func(t *testing.T, r *recorder) {
				if e := r.status("wamid.S").Conversation.ExpirationTimestamp; e != "1767312000" {
					t.Errorf("expiration %q", e)
				}
			},
		},
		{
			name:     "error object without a code",
			value:    messagesValue(`"statuses":[{"id":"wamid.F","status":"failed","timestamp":"1","recipient_id":"237690000001","errors":[{"title":"no code here"}]}]`),
			statuses: []string{"wamid.F"},
			problems: []string{"entry[0].changes[0].value.statuses[0].errors[0]"},
			check: func(t *testing.T, r *recorder) {
				s := r.status("wamid.F")
				if s.Status != "failed" || len(s.Errors) != 0 || len(s.Problems) != 1 || s.Extra["errors"] == nil {
					t.Errorf("status %+v", s)
				}
			},
		},
		{
			name:     "float error code",
			value:    messagesValue(`"statuses":[{"id":"wamid.G","status":"failed","timestamp":"1","recipient_id":"237690000001","errors":[{"code":131049.0,"title":"x"}]}]`),
			statuses: []string{"wamid.G"},
			check: func(t *testing.T, r *recorder) {
				if s := r.status("wamid.G"); len(s.Errors) != 1 || s.Errors[0].Code != errcodes.MarketingLimit {
					t.Errorf("status %+v", s)
				}
			},
		},
		{
			name:     "text body of the wrong type",
			value:    messagesValue(`"messages":[{"from":"237690000001","id":"wamid.B","timestamp":"1","type":"text","text":{"body":{"nested":1}}},` + fxText + `]`),
			messages: []string{"wamid.B", "wamid.TEXT"},
			problems: []string{"entry[0].changes[0].value.messages[0].text.body"},
		},
		{
			name:     "context that is not an object",
			value:    messagesValue(`"messages":[{"from":"237690000001","id":"wamid.C","timestamp":"1","type":"text","text":{"body":"b"},"context":"oops"}]`),
			messages: []string{"wamid.C"},
			problems: []string{"entry[0].changes[0].value.messages[0].context"},
			check: func(t *testing.T, r *recorder) {
				if m := r.message("wamid.C"); m.Context != nil || m.ReplyTo() != "" || string(m.Extra["context"]) != `"oops"` {
					t.Errorf("message %+v", m)
				}
			},
		},
		{
			name:     "a message that is not an object",
			value:    messagesValue(`"messages":[42,` + fxText + `]`),
			messages: []string{"wamid.TEXT"},
			problems: []string{"entry[0].changes[0].value.messages[0]"},
			check: func(t *testing.T, r *recorder) {
				if len(r.other) != 1 {
					t.Errorf("the unreadable item did not reach OnOther: %v", r.other)
				}
			},
		},
		{
			name:     "errors as an object",
			value:    messagesValue(`"statuses":[{"id":"wamid.E","status":"failed","timestamp":"1","recipient_id":"2","errors":{"code":131026}}]`),
			statuses: []string{"wamid.E"},
			problems: []string{"entry[0].changes[0].value.statuses[0].errors"},
		},
		{
			// Some gateways forward Meta's value with every member of every
			// field present and null or zero.
			name:     "null members",
			value:    `{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"1"},"contacts":null,"errors":null,"messages":null,"ban_info":null,"message_template_id":0,"statuses":[{"id":"wamid.Z","status":"delivered","timestamp":"1","recipient_id":"2","conversation":null,"pricing":null,"errors":null}]}`,
			statuses: []string{"wamid.Z"},
			check: func(t *testing.T, r *recorder) {
				if s := r.status("wamid.Z"); s.Conversation != nil || s.Pricing != nil || len(s.Problems) != 0 {
					t.Errorf("status %+v", s)
				}
			},
		},
		{
			name:     "boolean as a string",
			value:    messagesValue(`"messages":[{"from":"237690000001","id":"wamid.V","timestamp":"1","type":"audio","audio":{"id":"9","voice":"true"}}]`),
			messages: []string{"wamid.V"},
			check: func(t *testing.T, r *recorder) {
				if m := r.message("wamid.V"); !m.Audio.Voice {
					t.Errorf("voice %+v", m.Audio)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r recorder
			var problems []string
			opts := append(r.options(), webhook.OnNotification(func(_ context.Context, n *webhook.Notification) error {
				for _, p := range n.Problems {
					problems = append(problems, p.Path)
					if !strings.HasPrefix(p.Error(), "webhook: field "+p.Path+": ") {
						t.Errorf("FieldError.Error() = %q", p.Error())
					}
				}
				return nil
			}))
			h := newHandler(t, opts...)
			if code := post(t, h, envelope("messages", tt.value)); code != http.StatusOK {
				t.Fatalf("POST = %d, want 200", code)
			}
			var gotM, gotS []string
			for _, m := range r.messages {
				gotM = append(gotM, m.ID)
			}
			for _, s := range r.statuses {
				gotS = append(gotS, s.ID)
			}
			if diff := cmp.Diff(tt.messages, gotM); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.statuses, gotS); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.problems, problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if tt.check != nil {
				tt.check(t, &r)
			}
		})
	}
}

// keyPaths lists every object key path in a JSON document, array indexes
// folded to [].
func keyPaths(t *testing.T, raw []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("invalid JSON %s: %v", raw, err)
	}
	set := map[string]bool{}
	var walk func(p string, v any)
	walk = func(p string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				set[p+"."+k] = true
				walk(p+"."+k, e)
			}
		case []any:
			for _, e := range x {
				walk(p+"[]", e)
			}
		}
	}
	walk("", v)
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestRoundTrip: issue 16. For every typed value, re-encoding what
// was parsed keeps every key of the input, typed or in Extra.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	bodies := map[string]string{"messages": allMessages, "bsuid": envelope("messages", messagesValue(fxBSUIDContact))}
	for field, value := range otherFields {
		bodies[field] = envelope(field, value)
	}
	for name, body := range bodies {
		n, err := webhook.Parse([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, err := json.Marshal(n)
		if err != nil {
			t.Fatalf("%s: marshal: %v", name, err)
		}
		if diff := cmp.Diff(keyPaths(t, []byte(body)), keyPaths(t, out)); diff != "" {
			t.Errorf("%s: notification keys (-in +out):\n%s", name, diff)
		}
		c := n.Entry[0].Changes[0]
		var typed any
		switch {
		case c.Value != nil:
			typed = c.Value
		case c.TemplateStatus != nil:
			typed = c.TemplateStatus
		case c.Quality != nil:
			typed = c.Quality
		case c.Capability != nil:
			typed = c.Capability
		case c.Account != nil:
			typed = c.Account
		default:
			continue // delivered raw only
		}
		re, err := json.Marshal(typed)
		if err != nil {
			t.Fatalf("%s: marshal typed value: %v", name, err)
		}
		in, got := keyPaths(t, c.Raw), keyPaths(t, re)
		var lost []string
		for _, k := range in {
			if !slices.Contains(got, k) {
				lost = append(lost, k)
			}
		}
		if len(lost) > 0 {
			t.Errorf("%s: typed value lost keys %v", name, lost)
		}
	}
}

// TestDeduperBoundedInBytes: issue 11 item 7. Dedupe memory was bounded in
// entries only; long keys could grow it without bound.
func TestDeduperBoundedInBytes(t *testing.T) {
	t.Parallel()
	const maxBytes = 4 << 10
	d := webhook.NewDeduper(1_000_000, maxBytes)
	for i := range 1000 {
		d.Seen(strings.Repeat("k", 200) + string(rune('a'+i%26)) + strings.Repeat("x", i%7) + string(rune(i)))
		if d.Bytes() > maxBytes {
			t.Fatalf("after %d keys Deduper holds %d bytes, over %d", i+1, d.Bytes(), maxBytes)
		}
	}
	if d.Len() == 0 || d.Len() > maxBytes/(200+webhook.DeduperKeyOverhead) {
		t.Errorf("Len = %d", d.Len())
	}
	d2 := webhook.NewDeduper(3, 1<<20)
	for _, k := range []string{"a", "b", "c", "d"} {
		if d2.Seen(k) {
			t.Errorf("%s seen before", k)
		}
	}
	if d2.Len() != 3 || d2.Seen("a") {
		t.Errorf("len %d; the oldest key should have been forgotten", d2.Len())
	}
	if !d2.Seen("d") {
		t.Error("recent key forgotten")
	}
	d2.Forget("d")
	if d2.Seen("d") {
		t.Error("forgotten key still seen")
	}
	// A key larger than the byte bound is still remembered alone.
	d3 := webhook.NewDeduper(10, 1)
	if d3.Seen("big") || !d3.Seen("big") || d3.Len() != 1 {
		t.Error("a single oversized key is not remembered")
	}
}

func TestDeduperConcurrent(t *testing.T) {
	t.Parallel()
	d := webhook.NewDeduper(500, 64<<10)
	var wg sync.WaitGroup
	var mu sync.Mutex
	firsts := map[string]int{}
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := string(rune('a'+(i+g)%50)) + "-key"
				if !d.Seen(k) {
					mu.Lock()
					firsts[k]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for k, n := range firsts {
		if n != 1 {
			t.Errorf("key %s first-seen %d times with no eviction possible", k, n)
		}
	}
}
