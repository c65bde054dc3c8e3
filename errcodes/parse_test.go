package errcodes_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/errcodes"
)

// Bodies shaped like the ones Meta sends (trace IDs and details invented).
const (
	body130429 = `{"error":{"message":"(#130429) Rate limit hit","type":"OAuthException","code":130429,` +
		`"error_data":{"messaging_product":"whatsapp","details":"Message failed to send because there were too many messages sent from this phone number in a short period of time"},` +
		`"error_subcode":2494055,"fbtrace_id":"Az8or2yhqkZfEZ-_4Qn_Bam"}}`
	body131056 = `{"error":{"message":"(#131056) (Business Account, Consumer Account) pair rate limit hit","type":"OAuthException","code":131056,` +
		`"error_data":{"messaging_product":"whatsapp","details":"Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time."},` +
		`"fbtrace_id":"AbCdEf123"}}`
	body190    = `{"error":{"message":"Error validating access token: Session has expired.","type":"OAuthException","code":190,"error_subcode":463,"fbtrace_id":"X1"}}`
	body100    = `{"error":{"message":"(#100) Invalid parameter","type":"OAuthException","code":100,"error_data":"Template name does not exist","error_user_title":"Bad template","error_user_msg":"Check the name","is_transient":false,"fbtrace_id":"Y2"}}`
	hook131049 = `{"code":131049,"title":"This message was not delivered to maintain healthy ecosystem engagement.",` +
		`"message":"This message was not delivered to maintain healthy ecosystem engagement.",` +
		`"error_data":{"details":"In order to maintain a healthy ecosystem engagement, the message failed to be delivered."},` +
		`"href":"https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/"}`
)

func TestParse(t *testing.T) {
	t.Parallel()
	f := false
	tests := []struct {
		name   string
		status int
		body   string
		want   *errcodes.Error
	}{
		{"throughput 400", 400, body130429, &errcodes.Error{
			HTTPStatus: 400, Code: 130429, Subcode: 2494055, Type: "OAuthException",
			Message:          "(#130429) Rate limit hit",
			Details:          "Message failed to send because there were too many messages sent from this phone number in a short period of time",
			MessagingProduct: "whatsapp", FBTraceID: "Az8or2yhqkZfEZ-_4Qn_Bam",
		}},
		{"same code as 429", 429, body130429, &errcodes.Error{
			HTTPStatus: 429, Code: 130429, Subcode: 2494055, Type: "OAuthException",
			Message:          "(#130429) Rate limit hit",
			Details:          "Message failed to send because there were too many messages sent from this phone number in a short period of time",
			MessagingProduct: "whatsapp", FBTraceID: "Az8or2yhqkZfEZ-_4Qn_Bam",
		}},
		{"pair", 400, body131056, &errcodes.Error{
			HTTPStatus: 400, Code: 131056, Type: "OAuthException",
			Message:          "(#131056) (Business Account, Consumer Account) pair rate limit hit",
			Details:          "Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time.",
			MessagingProduct: "whatsapp", FBTraceID: "AbCdEf123",
		}},
		{"token", 401, body190, &errcodes.Error{
			HTTPStatus: 401, Code: 190, Subcode: 463, Type: "OAuthException",
			Message: "Error validating access token: Session has expired.", FBTraceID: "X1",
		}},
		{"string error_data and user fields", 400, body100, &errcodes.Error{
			HTTPStatus: 400, Code: 100, Type: "OAuthException", Message: "(#100) Invalid parameter",
			Details: "Template name does not exist", UserTitle: "Bad template", UserMessage: "Check the name",
			IsTransient: &f, FBTraceID: "Y2",
		}},
		{"code as string", 400, `{"error":{"code":"4","message":"(#4) Application request limit reached"}}`, &errcodes.Error{
			HTTPStatus: 400, Code: 4, Message: "(#4) Application request limit reached",
		}},
		{"whitespace", 503, "\n {\"error\": {\"code\": 2494100}} \n", &errcodes.Error{HTTPStatus: 503, Code: 2494100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := errcodes.Parse(tt.status, []byte(tt.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, reason string
	}{
		{"empty", "", "empty body"},
		{"html from a proxy", "<html><body>502 Bad Gateway</body></html>", "invalid JSON"},
		{"success body", `{"messaging_product":"whatsapp","contacts":[{"input":"1","wa_id":"1"}],"messages":[{"id":"wamid.X"}]}`, "no error object"},
		{"null error", `{"error":null}`, "no error object"},
		{"error without code", `{"error":{"message":"boom"}}`, "no error code"},
		{"null code", `{"error":{"code":null}}`, "no error code"},
		{"fractional code", `{"error":{"code":1.5}}`, "error code is not a non-negative integer"},
		{"negative code", `{"error":{"code":-3}}`, "error code is not a non-negative integer"},
		{"huge code", `{"error":{"code":99999999999999999999}}`, "error code is not a non-negative integer"},
		{"error is a string", `{"error":"nope"}`, "error is not an object"},
		{"array", `[1,2]`, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := errcodes.Parse(502, []byte(tt.body))
			if got != nil || err == nil {
				t.Fatalf("Parse = %v, %v; want nil and an error", got, err)
			}
			if !errors.Is(err, errcodes.ErrNotGraphError) {
				t.Errorf("error %v does not match ErrNotGraphError", err)
			}
			var pe *errcodes.ParseError
			if !errors.As(err, &pe) || pe.Status != 502 || pe.Reason != tt.reason {
				t.Errorf("error = %#v, want status 502 and reason %q", err, tt.reason)
			}
			if !strings.Contains(err.Error(), "502") {
				t.Errorf("error %q does not name the status", err)
			}
		})
	}
}

func TestParseWebhook(t *testing.T) {
	t.Parallel()
	got, err := errcodes.ParseWebhook([]byte(hook131049))
	if err != nil {
		t.Fatal(err)
	}
	want := &errcodes.Error{
		Code:    131049,
		Title:   "This message was not delivered to maintain healthy ecosystem engagement.",
		Message: "This message was not delivered to maintain healthy ecosystem engagement.",
		Details: "In order to maintain a healthy ecosystem engagement, the message failed to be delivered.",
		Href:    "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseWebhook mismatch (-want +got):\n%s", diff)
	}
	if !errors.Is(got, errcodes.MarketingLimit) {
		t.Error("webhook 131049 does not match MarketingLimit")
	}
	if _, err := errcodes.ParseWebhook([]byte(`{"title":"x"}`)); !errors.Is(err, errcodes.ErrNotGraphError) || !strings.Contains(err.Error(), "webhook") {
		t.Errorf("ParseWebhook(no code) error = %v", err)
	}
}

func TestErrorStringIsSafe(t *testing.T) {
	t.Parallel()
	body := `{"error":{"code":131026,"message":"(#131026) Message undeliverable to +237690000001",` +
		`"error_data":{"details":"recipient 237690000001 token EAAGm0PX4ZCpsBAKZCXYZ1234567890abcdefghijklmnopqrstuvwxyz"},"fbtrace_id":"T1"}}`
	e, err := errcodes.Parse(400, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	s := e.Error()
	for _, secret := range []string{"237690000001", "EAAGm0PX4ZCpsBAKZ"} {
		if strings.Contains(s, secret) {
			t.Errorf("Error() = %q leaks %q", s, secret)
		}
	}
	if want := "errcodes: 131026 Message Undeliverable (http 400) fbtrace_id=T1"; s != want {
		t.Errorf("Error() = %q, want %q", s, want)
	}
	unknown := &errcodes.Error{Code: 777777, Title: "call 237690000001 now"}
	if got, want := unknown.Error(), "errcodes: 777777 call [number] now"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"plain text (#131056)":              "plain text (#131056)",
		"to +237 690 00 00 01":              "to +[number]",
		"to +237690000001.":                 "to +[number].",
		"wa_id237690000001x":                "wa_id[number]x",
		"Bearer " + strings.Repeat("A", 45): "Bearer [redacted]",
		strings.Repeat("é", 150):            strings.Repeat("é", 100),
	}
	for in, want := range tests {
		if got := errcodes.Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrorUnmarshalJSON(t *testing.T) {
	t.Parallel()
	var status struct {
		Errors []errcodes.Error `json:"errors"`
	}
	if err := json.Unmarshal([]byte(`{"errors":[`+hook131049+`]}`), &status); err != nil {
		t.Fatal(err)
	}
	if len(status.Errors) != 1 || status.Errors[0].Code != errcodes.MarketingLimit {
		t.Fatalf("decoded %+v", status.Errors)
	}
	if err := json.Unmarshal([]byte(`{"errors":[{"title":"no code"}]}`), &status); !errors.Is(err, errcodes.ErrNotGraphError) {
		t.Errorf("Unmarshal without code: %v", err)
	}
}

// TestParseWebhookLenient: shapes seen in webhook error objects (issue 16):
// an integral code written as 131049.0 and message-level errors whose
// details sit at the top level, not under error_data.
func TestParseWebhookLenient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		raw     string
		code    errcodes.Code
		details string
	}{
		{"integral float code", `{"code":131049.0,"title":"x"}`, 131049, ""},
		{"exponent code", `{"code":1.31049e5}`, 131049, ""},
		{"string code", `{"code":"131051"}`, 131051, ""},
		{"top-level details", `{"code":131051,"details":"Message type unknown"}`, 131051, "Message type unknown"},
		{"error_data wins", `{"code":131051,"details":"top","error_data":{"details":"nested"}}`, 131051, "nested"},
	}
	for _, tt := range tests {
		e, err := errcodes.ParseWebhook([]byte(tt.raw))
		if err != nil || e.Code != tt.code || e.Details != tt.details {
			t.Errorf("%s: ParseWebhook = %+v, %v; want code %d details %q", tt.name, e, err, tt.code, tt.details)
		}
	}
	for _, bad := range []string{`{"code":131049.5}`, `{"code":-1.0}`, `{"code":"NaN"}`, `{"code":1e300}`} {
		if _, err := errcodes.ParseWebhook([]byte(bad)); !errors.Is(err, errcodes.ErrNotGraphError) {
			t.Errorf("ParseWebhook(%s) = %v, want ErrNotGraphError", bad, err)
		}
	}
}
