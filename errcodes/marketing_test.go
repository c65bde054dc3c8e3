package errcodes_test

import (
	"testing"
	"time"

	"github.com/wapace/wapace/errcodes"
)

// metaBodies2026 are answers as Meta's pages give them for the codes added
// from the error codes page's "Marketing Messages API for WhatsApp Error
// codes" table (message, details and HTTP status as Meta lists them) and
// its management sections (title as the message, description as the
// details): the Graph error syntax of the page, with trace IDs written for
// the test.
var metaBodies2026 = []struct {
	name    string
	status  int
	body    string
	code    errcodes.Code
	details string
	scope   errcodes.Scope
	retry   bool
	wait    time.Duration
}{
	// The Marketing Messages API's codes: message and details as Meta's
	// table gives them, at the HTTP status it documents.
	{"non-marketing on marketing_messages", 400,
		`{"error":{"message":"(#131055) Method not allowed","type":"OAuthException","code":131055,"error_data":{"messaging_product":"whatsapp","details":"Only marketing template messages are supported"},"fbtrace_id":"AmM1"}}`,
		errcodes.MarketingAPINotAllowed, "Only marketing template messages are supported", errcodes.ScopeRequest, false, 0},
	{"utility template on marketing_messages", 400,
		`{"error":{"message":"(#134100) Only marketing messages supported","type":"OAuthException","code":134100,"error_data":{"messaging_product":"whatsapp","details":"You're only able to send marketing messages on this API."},"fbtrace_id":"AmM2"}}`,
		errcodes.MarketingAPITemplateCategory, "You're only able to send marketing messages on this API.", errcodes.ScopeRequest, false, 0},
	{"template still syncing", 400,
		`{"error":{"message":"(#134101) Your template is still syncing","type":"OAuthException","code":134101,"error_data":{"messaging_product":"whatsapp","details":"When you send a message from a template, the template syncing process can take up to 10 minutes to complete. Wait a few minutes, and then try sending your message again."},"fbtrace_id":"AmM3"}}`,
		errcodes.MarketingAPITemplateSync, "When you send a message from a template, the template syncing process can take up to 10 minutes to complete. Wait a few minutes, and then try sending your message again.", errcodes.ScopeTemplate, true, 10 * time.Minute},
	{"template unavailable, at Meta's 500", 500,
		`{"error":{"message":"(#134102) Template unavailable for use","type":"OAuthException","code":134102,"error_data":{"messaging_product":"whatsapp","details":"Please check your eligibility status to ensure you are onboarded (/documentation/business-messaging/whatsapp/marketing-messages/onboarding#ensure-you-are-eligible-to-onboard) or contact Meta's customer support."},"fbtrace_id":"AmM4"}}`,
		errcodes.MarketingAPINotEligible, "Please check your eligibility status to ensure you are onboarded (/documentation/business-messaging/whatsapp/marketing-messages/onboarding#ensure-you-are-eligible-to-onboard) or contact Meta's customer support.", errcodes.ScopeWABA, false, 0},
	{"onboarding requested twice", 400,
		`{"error":{"message":"(#1752041) Duplicate Request","type":"OAuthException","code":1752041,"error_data":{"messaging_product":"whatsapp","details":"Duplicate Request is thrown when a client has already been invited to onboard by any partner."},"fbtrace_id":"AmM8"}}`,
		errcodes.MarketingAPIDuplicateRequest, "Duplicate Request is thrown when a client has already been invited to onboard by any partner.", errcodes.ScopeBusiness, false, 0},
	// The error codes page's management codes (its title as the message,
	// its description as the details).
	{"migration: number exists", 400,
		`{"error":{"message":"(#2388012) This phone number already exists in your list of phone numbers.","type":"OAuthException","code":2388012,"error_data":{"messaging_product":"whatsapp","details":"The phone number you are trying to migrate is already present in your WhatsApp account."},"fbtrace_id":"AmM5"}}`,
		errcodes.PhoneNumberExists, "The phone number you are trying to migrate is already present in your WhatsApp account.", errcodes.ScopeRequest, false, 0},
	{"migration: request code", 400,
		`{"error":{"message":"(#2388091) This phone number isn't eligible to receive a registration code since it is not being migrated.","type":"OAuthException","code":2388091,"error_data":{"messaging_product":"whatsapp","details":"Phone ownership verification APIs are not available for this use case."},"fbtrace_id":"AmM6"}}`,
		errcodes.MigrationCodeNotEligible, "Phone ownership verification APIs are not available for this use case.", errcodes.ScopeRequest, false, 0},
	{"migration: verify code", 400,
		`{"error":{"message":"(#2388093) This phone number isn't eligible to verify a registration code since it is not being migrated.","type":"OAuthException","code":2388093,"error_data":{"messaging_product":"whatsapp","details":"Phone ownership verification APIs are not available for this use case."},"fbtrace_id":"AmM7"}}`,
		errcodes.MigrationVerifyNotEligible, "Phone ownership verification APIs are not available for this use case.", errcodes.ScopeRequest, false, 0},
	{"sync requested twice", 400,
		`{"error":{"message":"(#2593107) Synchronization Request limit exceeded","type":"OAuthException","code":2593107,"error_data":{"messaging_product":"whatsapp","details":"You have exceeded the maximum number of times to call the synchronization api for this phone number."},"fbtrace_id":"AmS1"}}`,
		errcodes.SyncLimitExceeded, "You have exceeded the maximum number of times to call the synchronization api for this phone number.", errcodes.ScopePhoneNumber, false, 0},
	{"sync after 24 h", 400,
		`{"error":{"message":"(#2593108) Synchronization Request made outside of allowed time window","type":"OAuthException","code":2593108,"error_data":{"messaging_product":"whatsapp","details":"Synchronization request can only be made within 24 hours of onboarding"},"fbtrace_id":"AmS2"}}`,
		errcodes.SyncOutsideWindow, "Synchronization request can only be made within 24 hours of onboarding", errcodes.ScopePhoneNumber, false, 0},
	{"template insights unavailable", 400,
		`{"error":{"message":"(#200005) Template insights unavailable","type":"OAuthException","code":200005,"error_data":{"messaging_product":"whatsapp","details":"Template insights are not available yet for this WhatsApp Business account."},"fbtrace_id":"AmT1"}}`,
		errcodes.TemplateInsightsUnavailable, "Template insights are not available yet for this WhatsApp Business account.", errcodes.ScopeWABA, false, 0},
	{"template insights stay on", 400,
		`{"error":{"message":"(#200006) Cannot disable template insights","type":"OAuthException","code":200006,"error_data":{"messaging_product":"whatsapp","details":"Invalid operation. Template Insights cannot be disabled once enabled."},"fbtrace_id":"AmT2"}}`,
		errcodes.TemplateInsightsPermanent, "Invalid operation. Template Insights cannot be disabled once enabled.", errcodes.ScopeRequest, false, 0},
	{"template insights off", 400,
		`{"error":{"message":"(#200007) Template Insights not enabled","type":"OAuthException","code":200007,"error_data":{"messaging_product":"whatsapp","details":"Template Insights have not been enabled for this WhatsApp Business Account"},"fbtrace_id":"AmT3"}}`,
		errcodes.TemplateInsightsNotEnabled, "Template Insights have not been enabled for this WhatsApp Business Account", errcodes.ScopeWABA, false, 0},
}

func TestParseMeta2026Codes(t *testing.T) {
	t.Parallel()
	for _, tc := range metaBodies2026 {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := errcodes.Parse(tc.status, []byte(tc.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if e.Code != tc.code || e.Details != tc.details || e.MessagingProduct != "whatsapp" || e.HTTPStatus != tc.status {
				t.Fatalf("Parse = %+v", e)
			}
			cl := e.Class()
			if !cl.Known || cl.Scope != tc.scope || cl.Retryable != tc.retry || cl.Wait != tc.wait || cl.OutcomeUnknown || cl.Hold != errcodes.HoldNone {
				t.Errorf("class = %+v", cl)
			}
			// A refusal below 500 proves nothing was sent: a resend cannot
			// deliver twice.
			if !cl.NotSent(tc.status) {
				t.Errorf("NotSent(%d) = false", tc.status)
			}
		})
	}
}

// TestMetaMarketingExample parses the example body of Meta's Marketing
// Messages API error table verbatim: code 100 with the details that tell a
// non-template message apart.
func TestMetaMarketingExample(t *testing.T) {
	t.Parallel()
	body := `{
  "error": {
    "message": "(#100) Invalid parameter",
    "type": "OAuthException",
    "code": 100,
    "error_data": {
      "messaging_product": "whatsapp",
      "details": "Message must be a template message."
    },
    "fbtrace_id": "Ak6nxJSySLEJz32Ps-QiZ1t"
  }
}`
	e, err := errcodes.Parse(400, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if e.Code != errcodes.InvalidParameter || e.Details != "Message must be a template message." || e.FBTraceID != "Ak6nxJSySLEJz32Ps-QiZ1t" || e.Type != "OAuthException" {
		t.Fatalf("Parse = %+v", e)
	}
	if cl := e.Class(); cl.Scope != errcodes.ScopeRequest || cl.Retryable || !cl.NotSent(400) {
		t.Errorf("class = %+v", cl)
	}
}

// TestHoldSchedules pins the one wait per code that every limiter applies
// (Class.HoldAfter): the pacing codes' first holds and their doubling.
func TestHoldSchedules(t *testing.T) {
	t.Parallel()
	const s = time.Second
	tests := []struct {
		code errcodes.Code
		want []time.Duration // holds after 0, 1, 2, ... consecutive refusals
	}{
		{errcodes.ThroughputLimit, []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s}},
		{errcodes.Maintenance, []time.Duration{10 * s, 20 * s, 40 * s, 60 * s, 60 * s}},
		{errcodes.MaintenanceMode, []time.Duration{2 * time.Minute, 2 * time.Minute}},
		{errcodes.AppRateLimit, []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute, time.Hour, time.Hour}},
		{errcodes.GraphRateLimit, []time.Duration{time.Minute, 2 * time.Minute}},
		{errcodes.WABARateLimit, []time.Duration{time.Minute, 2 * time.Minute}},
		{errcodes.WABAManagementRateLimit, []time.Duration{time.Minute, 2 * time.Minute}},
		{errcodes.MarketingLimit, []time.Duration{24 * time.Hour, 24 * time.Hour}},
		{errcodes.PairRateLimit, []time.Duration{0, 0}}, // the pair rule's own hold
		{errcodes.SpamRateLimit, []time.Duration{0, 0}}, // quality, not waiting, lifts it
		{errcodes.InvalidParameter, []time.Duration{0}},
	}
	for _, tc := range tests {
		cl := errcodes.Lookup(tc.code)
		for n, want := range tc.want {
			if got := cl.HoldAfter(n); got != want {
				t.Errorf("%d: HoldAfter(%d) = %v, want %v", tc.code, n, got, want)
			}
		}
		if got := cl.HoldAfter(1 << 20); cl.MaxWait > 0 && got != cl.MaxWait {
			t.Errorf("%d: HoldAfter(huge) = %v, want MaxWait %v", tc.code, got, cl.MaxWait)
		}
	}
	if errcodes.Lookup(errcodes.ThroughputLimit).MaxWait != 30*s {
		t.Error("130429's MaxWait")
	}
}

// TestHoldCodes: the code a sender's own hold of each limit stands for.
func TestHoldCodes(t *testing.T) {
	t.Parallel()
	for h, want := range map[errcodes.Hold]errcodes.Code{
		errcodes.HoldNone: 0, errcodes.HoldPair: 131056, errcodes.HoldPhoneNumber: 130429,
		errcodes.HoldApp: 4, errcodes.HoldWABA: 80007, errcodes.HoldTier: 131064, errcodes.HoldRecipient: 131049,
	} {
		if got := h.Code(); got != want || (want != 0 && got.Class().Hold != h) {
			t.Errorf("%v.Code() = %d, want %d holding %v", h, got, want, h)
		}
	}
}

// TestEveryCodeOnMetasPage: every code the error codes page lists
// (November 2025 text, section by section, with its Marketing Messages
// API table) is known, so that the README's "every code" holds.
func TestEveryCodeOnMetasPage(t *testing.T) {
	t.Parallel()
	page := []errcodes.Code{
		0, 3, 10, 190, 200, 250, 299, // authorization
		368, 130497, 131031, // integrity
		2388040, 2388047, 2388072, 2388073, 2388293, 2388299, // template creation
		2388019,                                              // send template
		2388001, 2388012, 2388091, 2388093, 2388103, 2494100, // phone migration
		200005, 200006, 200007, // template insights
		2593079, 2593085, // WhatsApp Business Account
		2593107, 2593108, // synchronization
		4, 80007, 130429, 131048, 131056, 133016, // throttling
		1, 2, 33, 100, 130472, 131000, 131005, 131008, 131009, 131016, 131021, 131026, 131037, 131042,
		131045, 131047, 131049, 131050, 131051, 131052, 131053, 131057, 132000, 132001, 132005, 132007,
		132012, 132015, 132016, 132068, 132069, 133000, 133004, 133005, 133006, 133008, 133009, 133010,
		133015, 134011, 135000, // other
		131055, 134100, 134101, 134102, 1752041, // Marketing Messages API
	}
	for _, c := range page {
		if cl := errcodes.Lookup(c); !cl.Known || cl.Title == "" {
			t.Errorf("%d is on Meta's page but Lookup says %+v", c, cl)
		}
	}
}
