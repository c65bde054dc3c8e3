package mcptool

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/wapace/wapace/cloudapi"
)

// SendArgs are the arguments of send_whatsapp_message. Exactly one of Text,
// Template and Buttons says what to send.
type SendArgs struct {
	// To is the recipient: a phone number in international format or a
	// business-scoped user ID (BSUID).
	To string `json:"to" jsonschema:"the recipient: a phone number in international format (+237 690 00 00 01) or a business-scoped user ID"`
	// From is the business phone number ID to send from; empty means the
	// first of Config.From.
	From string `json:"from,omitempty" jsonschema:"the business phone number ID to send from; defaults to the first one this server allows"`
	// Text is the body of a free-form text message (1 to 4,096 characters).
	Text string `json:"text,omitempty" jsonschema:"the body of a free-form text message; only possible within 24 hours of the user's last message"`
	// PreviewURL asks for a link preview of the first URL in Text.
	PreviewURL bool `json:"preview_url,omitempty" jsonschema:"show a preview of the first URL in text"`
	// Template is an approved template message.
	Template *TemplateArgs `json:"template,omitempty" jsonschema:"an approved template message, the only kind allowed outside the 24-hour service window"`
	// Buttons is an interactive message with reply buttons.
	Buttons *ButtonsArgs `json:"buttons,omitempty" jsonschema:"an interactive message with 1 to 3 reply buttons"`
	// ReplyTo is the wamid of the user's message this one answers.
	ReplyTo string `json:"reply_to,omitempty" jsonschema:"the message ID (wamid) of the user's message this one answers"`
	// IdempotencyKey identifies the message: a call repeating a key with
	// the same message returns the state of the message first sent with it
	// and sends nothing; one with another message under the key is refused
	// (WHATSAPP_IDEMPOTENCY_CONFLICT).
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"identifies this message: repeating the same message with its key never sends twice but returns its state; another message under a used key is refused; generated when absent"`
	// MaxDelayMS is the freshness deadline as a delay from now, in whole
	// milliseconds (the schema says integer; a float64 so that 5000.0 from a
	// client that writes every number with a point is read as 5000).
	MaxDelayMS *float64 `json:"max_delay_ms,omitempty" jsonschema:"freshness: the message is useless if it cannot be sent within this many milliseconds"`
	// ExpiresAt is the freshness deadline as an RFC 3339 instant.
	ExpiresAt string `json:"expires_at,omitempty" jsonschema:"freshness: the RFC 3339 instant after which the message must not be sent"`
	// Delivery is "sync" (wait, bounded, for Meta to accept the message or
	// fail) or "async" (return queued at once when the message cannot go
	// now). Empty means "async".
	Delivery string `json:"delivery,omitempty" jsonschema:"sync: wait a bounded time for Meta to accept, else fail without queueing; async (default): return queued at once when the message cannot go now"`
}

// TemplateArgs name an approved template and fill its body's variables.
type TemplateArgs struct {
	// Name is the template's name.
	Name string `json:"name" jsonschema:"the approved template's name"`
	// Language is its language code, such as "en_US".
	Language string `json:"language" jsonschema:"the template's language code, such as en_US"`
	// Category is "marketing", "utility" or "authentication".
	Category string `json:"category,omitempty" jsonschema:"marketing, utility or authentication"`
	// Parameters fill the body's variables in order.
	Parameters []string `json:"parameters,omitempty" jsonschema:"values of the body's variables, in order"`
	// Code is an authentication template's one-time code (fills the body
	// and the copy-code button); it implies the authentication category.
	Code string `json:"code,omitempty" jsonschema:"the one-time code of an authentication template; never queued past its validity"`
}

// ButtonsArgs are an interactive reply-button message.
type ButtonsArgs struct {
	// Body is the message's text.
	Body string `json:"body" jsonschema:"the message's text"`
	// Buttons are 1 to 3 reply buttons.
	Buttons []ButtonArg `json:"buttons" jsonschema:"1 to 3 reply buttons"`
}

// ButtonArg is one reply button.
type ButtonArg struct {
	// ID comes back in the user's reply.
	ID string `json:"id" jsonschema:"comes back in the user's reply"`
	// Title is the button's text.
	Title string `json:"title" jsonschema:"the button's text, at most 20 characters"`
}

// StatusArgs are the arguments of get_message_status: one of the two.
type StatusArgs struct {
	// OperationID is the operation_id send_whatsapp_message returned.
	OperationID string `json:"operation_id,omitempty" jsonschema:"the operation_id send_whatsapp_message returned"`
	// IdempotencyKey is the message's idempotency key.
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"the message's idempotency_key"`
}

// Delivery modes.
const (
	deliverySync  = "sync"
	deliveryAsync = "async"
)

// argError reports malformed arguments: the call is answered with a
// protocol error (JSON-RPC invalid params), not a tool result.
type argError struct{ msg string }

func (e *argError) Error() string { return "mcptool: invalid arguments: " + e.msg }

func badArgs(format string, a ...any) error { return &argError{fmt.Sprintf(format, a...)} }

// request is a send request after its arguments were checked.
type request struct {
	from     string
	msg      cloudapi.Message
	deadline time.Time // zero: none
	sync     bool
	capped   bool // the deadline the outbox sees is the end of a sync wait
}

// parseSend turns arguments into a request: malformed arguments are an
// *argError. The message itself is not validated here (Validate reports
// content Meta would refuse as a tool error).
func parseSend(a SendArgs, allowed []string, now time.Time, replyTTL time.Duration) (request, error) {
	var r request
	switch a.Delivery {
	case "", deliveryAsync:
	case deliverySync:
		r.sync = true
	default:
		return r, badArgs("delivery must be %q or %q", deliverySync, deliveryAsync)
	}
	r.from = allowed[0]
	if a.From != "" {
		ok := false
		for _, f := range allowed {
			ok = ok || f == a.From
		}
		if !ok {
			return r, badArgs("from is not a business number this server may send from")
		}
		r.from = a.From
	}
	if a.To == "" {
		return r, badArgs("to is required")
	}
	kinds := 0
	for _, set := range []bool{a.Text != "", a.Template != nil, a.Buttons != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return r, badArgs("exactly one of text, template and buttons is required")
	}
	if a.PreviewURL && a.Text == "" {
		return r, badArgs("preview_url applies to text only")
	}
	switch {
	case a.MaxDelayMS != nil && a.ExpiresAt != "":
		return r, badArgs("give max_delay_ms or expires_at, not both")
	case a.MaxDelayMS != nil:
		d := *a.MaxDelayMS
		switch {
		case d < 0:
			return r, badArgs("max_delay_ms must not be negative")
		case d > float64(366*24*time.Hour/time.Millisecond):
			return r, badArgs("max_delay_ms is longer than a year")
		case d != math.Trunc(d):
			return r, badArgs("max_delay_ms must be a whole number of milliseconds")
		}
		r.deadline = now.Add(time.Duration(d) * time.Millisecond)
	case a.ExpiresAt != "":
		t, err := time.Parse(time.RFC3339Nano, a.ExpiresAt)
		if err != nil {
			return r, badArgs("expires_at is not an RFC 3339 instant")
		}
		r.deadline = t
	}

	var m cloudapi.Message
	switch {
	case a.Text != "" && a.PreviewURL:
		m = cloudapi.TextWithPreview(a.To, a.Text)
	case a.Text != "":
		m = cloudapi.Text(a.To, a.Text)
	case a.Template != nil:
		t := a.Template
		switch {
		case t.Code != "":
			if t.Category != "" && t.Category != string(cloudapi.CategoryAuthentication) {
				return r, badArgs("template.code applies to authentication templates only")
			}
			if len(t.Parameters) > 0 {
				return r, badArgs("an authentication template takes its code, not parameters")
			}
			m = cloudapi.AuthenticationTemplate(a.To, t.Name, t.Language, t.Code)
		default:
			switch cloudapi.Category(t.Category) {
			case "", cloudapi.CategoryMarketing, cloudapi.CategoryUtility, cloudapi.CategoryAuthentication:
			default:
				return r, badArgs("template.category must be marketing, utility or authentication")
			}
			var comps []cloudapi.Component
			if len(t.Parameters) > 0 {
				ps := make([]cloudapi.Parameter, len(t.Parameters))
				for i, p := range t.Parameters {
					ps[i] = cloudapi.TextParam(p)
				}
				comps = append(comps, cloudapi.Body(ps...))
			}
			m = cloudapi.Template(a.To, t.Name, t.Language, comps...)
			m.Category = cloudapi.Category(t.Category)
		}
	case a.Buttons != nil:
		bs := make([]cloudapi.Button, len(a.Buttons.Buttons))
		for i, b := range a.Buttons.Buttons {
			bs[i] = cloudapi.Button{ID: b.ID, Title: b.Title}
		}
		m = cloudapi.Buttons(a.To, a.Buttons.Body, bs...)
	}
	m.ReplyTo = a.ReplyTo
	m.IdempotencyKey = a.IdempotencyKey

	// Freshness. A caller's deadline wins; otherwise an authentication code
	// keeps cloudapi's default (AuthenticationTTL), and a free-form message,
	// which only exists as part of a conversation, goes stale after replyTTL.
	// An authentication code never waits past AuthenticationTTL, whatever
	// the caller asked.
	switch {
	case m.Category == cloudapi.CategoryAuthentication:
		if ttl := now.Add(cloudapi.AuthenticationTTL); r.deadline.IsZero() || r.deadline.After(ttl) {
			r.deadline = ttl
		}
	case !r.deadline.IsZero():
	case m.Kind() != cloudapi.KindTemplate || m.ReplyTo != "":
		r.deadline = now.Add(replyTTL)
	}
	m.ExpiresAt = r.deadline
	r.msg = m
	return r, nil
}

// parseStatus checks get_message_status's arguments.
func parseStatus(a StatusArgs) error {
	if a.OperationID == "" && a.IdempotencyKey == "" {
		return badArgs("operation_id or idempotency_key is required")
	}
	return nil
}

// checkRaw names the fields that clash, or the ones missing: exactly one
// content (text, template or buttons), at most one deadline.
func (SendArgs) checkRaw(args map[string]any) error {
	var content []string
	for _, k := range []string{"text", "template", "buttons"} {
		if v, ok := args[k]; ok && v != nil {
			content = append(content, k)
		}
	}
	switch len(content) {
	case 0:
		return badArgs("give the message's content: one of text, template or buttons")
	case 1:
	default:
		return badArgs("give one content, not %s: text, template and buttons are alternatives", strings.Join(content, " and "))
	}
	if args["max_delay_ms"] != nil && args["expires_at"] != nil {
		return badArgs("give max_delay_ms or expires_at, not both: they are two ways to set one deadline")
	}
	return nil
}

// checkRaw asks for a name of the message.
func (StatusArgs) checkRaw(args map[string]any) error {
	if args["operation_id"] == nil && args["idempotency_key"] == nil {
		return badArgs("give operation_id or idempotency_key")
	}
	return nil
}
