package cloudapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wapace/wapace/internal/phone"
)

// ValidationError reports a message that cannot be sent as it is. Nothing
// was reserved or sent: the message is in StateNotSubmitted. Its text never
// repeats the recipient.
type ValidationError struct {
	// Field names the offending part, such as "text.body" or "to".
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error returns "cloudapi: invalid message: <field>: <reason>".
func (e *ValidationError) Error() string {
	return "cloudapi: invalid message: " + e.Field + ": " + e.Reason
}

func invalid(field, reason string) error { return &ValidationError{Field: field, Reason: reason} }

// Kind is a message's type, as in the request's "type" member.
type Kind string

// The message kinds the constructors build.
const (
	KindText        Kind = "text"
	KindTemplate    Kind = "template"
	KindImage       Kind = "image"
	KindDocument    Kind = "document"
	KindAudio       Kind = "audio"
	KindVideo       Kind = "video"
	KindSticker     Kind = "sticker"
	KindInteractive Kind = "interactive"
	KindLocation    Kind = "location"
	KindReaction    Kind = "reaction"
	KindContacts    Kind = "contacts"
	// KindRead marks an inbound message as read: not a message to the
	// user, so neither the pair limit nor the tier applies.
	KindRead Kind = "read"
)

// Category is a template's category, which sets its default freshness.
type Category string

// Template categories.
const (
	CategoryMarketing      Category = "marketing"
	CategoryUtility        Category = "utility"
	CategoryAuthentication Category = "authentication"
)

// AuthenticationTTL is the default freshness of an authentication template:
// Meta's default time-to-live for authentication messages is 10 minutes,
// and a one-time code that arrives later is of no use.
const AuthenticationTTL = 10 * time.Minute

// Message is one message to send. Build it with a constructor (Text,
// Template, Image, Buttons, ...); the exported fields tune how it is sent.
// A Message is a value: a constructor's result can be copied and changed.
type Message struct {
	// ExpiresAt is the message's freshness deadline: if it cannot be sent
	// by then, Send gives up at once with a *BackpressureError rather than
	// send it late. Zero means the default for its kind: AuthenticationTTL
	// after Send is called for authentication templates, none otherwise.
	ExpiresAt time.Time
	// IdempotencyKey identifies the message across retries and in status
	// webhooks (it travels as biz_opaque_callback_data). Zero means Send
	// generates one; it is in the Result and in every error.
	IdempotencyKey string
	// ReplyTo is the wamid of the message this one answers, if any.
	ReplyTo string
	// Category is a template's category (authentication templates get a
	// 10-minute default freshness).
	Category Category
	// InServiceWindow reports whether the user wrote within the last 24
	// hours, so that a template to them does not count toward the messaging
	// tier. Leave it false when unsure: the tier then errs on the safe side.
	InServiceWindow bool
	// ProductPolicy is the Marketing Messages API's product_policy, sent
	// when the template goes to /marketing_messages (see
	// WithTemplateCategories); the zero value sends none (Meta's default,
	// PolicyCloudAPIFallback). Only templates may set it.
	ProductPolicy ProductPolicy
	// ActivitySharing, when not nil, is the Marketing Messages API's
	// message_activity_sharing for this message: whether Meta may use its
	// activity (reads, clicks) to optimise delivery, overriding the
	// account's setting. Sent with /marketing_messages only; only
	// templates may set it.
	ActivitySharing *bool

	to      string // as given; parsed by check
	kind    Kind
	payload any    // the kind's JSON object
	err     error  // a constructor's validation error, reported by Send
	msgID   string // KindRead, KindReaction: the target message
}

// To returns the recipient as given to the constructor.
func (m Message) To() string { return m.to }

// Kind returns the message's kind.
func (m Message) Kind() Kind { return m.kind }

// Validate reports whether the message can be sent: a *ValidationError if
// not. It checks everything that could fail later, the request's encoding
// included, so that Send fails before anything is reserved or sent.
func (m Message) Validate() error {
	if _, err := m.check(); err != nil {
		return err
	}
	// What else could fail in encodeFor: the content's encoding.
	_, err := m.content()
	return err
}

// check validates m and parses its recipient once: the zero Recipient for
// MarkRead, which has none.
func (m Message) check() (phone.Recipient, error) {
	var to phone.Recipient
	if m.kind == "" {
		return to, invalid("type", "empty message; build it with a constructor")
	}
	if m.err != nil {
		return to, m.err
	}
	if m.kind != KindRead {
		r, err := phone.ParseTo(m.to)
		if err != nil {
			var pe *phone.Error
			if errors.As(err, &pe) {
				return to, invalid("to", pe.Reason)
			}
			return to, invalid("to", "not a phone number or a business-scoped user ID")
		}
		to = r
	}
	switch {
	case len(m.IdempotencyKey) > 512:
		return to, invalid("idempotency_key", "longer than 512 bytes")
	case !utf8.ValidString(m.IdempotencyKey):
		// It travels as biz_opaque_callback_data: JSON would replace the bad
		// bytes, and status webhooks would never match the key.
		return to, invalid("idempotency_key", "not valid UTF-8")
	case m.ReplyTo != "" && !utf8.ValidString(m.ReplyTo):
		return to, invalid("context.message_id", "not valid UTF-8")
	}
	switch m.Category {
	case "", CategoryMarketing, CategoryUtility, CategoryAuthentication:
	default:
		return to, invalid("category", "unknown template category")
	}
	switch {
	case m.ProductPolicy != "" && m.ProductPolicy != PolicyCloudAPIFallback && m.ProductPolicy != PolicyStrict:
		return to, invalid("product_policy", "must be CLOUD_API_FALLBACK or STRICT")
	case (m.ProductPolicy != "" || m.ActivitySharing != nil) && m.kind != KindTemplate:
		return to, invalid("product_policy", "only template messages go to the Marketing Messages API")
	case (m.ProductPolicy != "" || m.ActivitySharing != nil) && m.Category != "" && m.Category != CategoryMarketing:
		return to, invalid("product_policy", "only marketing templates go to the Marketing Messages API")
	}
	if to.IsBSUID() && m.kind == KindTemplate && m.Category == CategoryAuthentication {
		// Meta, "Business-scoped user IDs": one-tap, zero-tap and copy-code
		// authentication templates still require a phone number (error
		// 131062); every other message type may go to a BSUID.
		return to, invalid("to", "authentication templates cannot be sent to a business-scoped user ID (Meta refuses them with 131062)")
	}
	return to, nil
}

// expiry returns the message's freshness deadline for a send started at
// now, or the zero Time for none.
func (m Message) expiry(now time.Time) time.Time {
	if !m.ExpiresAt.IsZero() {
		return m.ExpiresAt
	}
	if m.kind == KindTemplate && m.Category == CategoryAuthentication {
		return now.Add(AuthenticationTTL)
	}
	return time.Time{}
}

// countsTowardTier reports whether the message is business-initiated in the
// sense of messaging tiers.
func (m Message) countsTowardTier() bool {
	return m.kind == KindTemplate && !m.InServiceWindow
}

// encodeFor returns the request's JSON body for recipient to, with
// callbackData as biz_opaque_callback_data; marketing adds the Marketing
// Messages API's own fields (product_policy, message_activity_sharing). A
// phone number goes in "to", a business-scoped user ID in "recipient"
// (Meta, "Business-scoped user IDs").
func (m Message) encodeFor(to phone.Recipient, callbackData string, marketing bool) ([]byte, error) {
	payload, err := m.content()
	if err != nil || m.kind == KindRead {
		return payload, err
	}
	// The object's members, printed in the order json.Marshal prints a
	// map's (by key), as this body was first built: the same bytes, without
	// the map and the reflection.
	var fs [10]bodyField
	n := 0
	add := func(key string, str string, raw []byte) {
		fs[n] = bodyField{key: key, str: str, raw: raw}
		n++
	}
	add("messaging_product", "whatsapp", nil)
	add("recipient_type", "individual", nil)
	add("type", string(m.kind), nil)
	add(string(m.kind), "", payload)
	if to.IsBSUID() {
		add("recipient", to.String(), nil)
	} else {
		add("to", to.String(), nil)
	}
	if m.ReplyTo != "" {
		add("context", "", appendJSONString([]byte(`{"message_id":`), m.ReplyTo))
		fs[n-1].raw = append(fs[n-1].raw, '}')
	}
	if callbackData != "" && m.kind != KindReaction {
		add("biz_opaque_callback_data", callbackData, nil)
	}
	if marketing && m.ProductPolicy != "" {
		add("product_policy", string(m.ProductPolicy), nil)
	}
	if marketing && m.ActivitySharing != nil {
		add("message_activity_sharing", "", strconv.AppendBool(nil, *m.ActivitySharing))
	}
	slices.SortFunc(fs[:n], func(a, b bodyField) int { return strings.Compare(a.key, b.key) })
	size := 2 + len(payload)
	for _, f := range fs[:n] {
		size += len(f.key) + len(f.str) + len(f.raw) + 6
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, f := range fs[:n] {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.key)
		b = append(b, ':')
		if f.raw != nil {
			b = append(b, f.raw...)
		} else {
			b = appendJSONString(b, f.str)
		}
	}
	return append(b, '}'), nil
}

// content returns the kind's JSON object, as json.Marshal encodes it. A
// message read back by UnmarshalJSON holds it encoded already: when
// json.Marshal would write those bytes as they are, they are used as they
// are (a stored message is encoded once when it is stored, not on every
// send and every Validate).
func (m Message) content() ([]byte, error) {
	if raw, ok := m.payload.(json.RawMessage); ok && verbatim(raw) {
		return raw, nil
	}
	b, err := json.Marshal(m.payload)
	if err != nil {
		return nil, invalid(string(m.kind), "cannot be encoded: "+strings.TrimPrefix(err.Error(), "json: "))
	}
	return b, nil
}

// verbatim reports whether json.Marshal writes raw, valid JSON, as it is:
// whether raw has no space between its tokens and no character
// json.Marshal escapes in a string (<, >, &, U+2028 and U+2029, whose
// UTF-8 encodings start with 0xE2, as other characters' do: those are left
// to json.Marshal too).
func verbatim(raw json.RawMessage) bool {
	in := false // within a string
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '<' || c == '>' || c == '&' || c == 0xE2:
			return false
		case in && c == '\\':
			i++ // the escaped character
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

// bodyField is one member of a request body: a string, or raw JSON.
type bodyField struct {
	key, str string
	raw      []byte
}

// appendJSONString appends s as json.Marshal prints a string: as it is
// when it holds only printable ASCII that needs no escape (json.Marshal
// also escapes <, > and &), else through json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// checkText checks a required or optional text field's length in
// characters.
func checkText(field, s string, required bool, maxRunes int) error {
	switch {
	case !utf8.ValidString(s):
		return invalid(field, "not valid UTF-8")
	case required && strings.TrimSpace(s) == "":
		return invalid(field, "empty")
	case runes(s) > maxRunes:
		return invalid(field, strconv.Itoa(runes(s))+" characters, at most "+strconv.Itoa(maxRunes))
	}
	return nil
}

// Text is a text message. The body must hold 1 to 4,096 characters.
// Links in the body get a preview only with TextWithPreview.
func Text(to, body string) Message {
	return Message{to: to, kind: KindText, payload: textPayload{Body: body}, err: checkText("text.body", body, true, 4096)}
}

// TextWithPreview is Text with a link preview for the first URL in body.
func TextWithPreview(to, body string) Message {
	m := Text(to, body)
	m.payload = textPayload{Body: body, PreviewURL: true}
	return m
}

type textPayload struct {
	PreviewURL bool   `json:"preview_url"`
	Body       string `json:"body"`
}

// Component is one component of a template message: its type ("header",
// "body", "button"), for buttons the sub-type and index, and parameters.
type Component struct {
	// Type is "header", "body", "footer", "button", "limited_time_offer"
	// or "carousel".
	Type string `json:"type"`
	// SubType is a button's kind, such as "url" or "quick_reply".
	SubType string `json:"sub_type,omitempty"`
	// Index is a button's position, 0 to 9.
	Index *int `json:"index,omitempty"`
	// Parameters fill the component's variables, in order.
	Parameters []Parameter `json:"parameters,omitempty"`
	// Cards are a carousel's cards.
	Cards []Card `json:"cards,omitempty"`
}

// Card is one card of a carousel template: its position and components
// (a media header, a body, buttons).
type Card struct {
	// CardIndex is the card's position, from 0.
	CardIndex int `json:"card_index"`
	// Components fill the card's variables.
	Components []Component `json:"components"`
}

// Carousel is a carousel template's component: up to 10 cards, each given
// as its components (a media header, a body, buttons) and numbered in
// order.
func Carousel(cards ...[]Component) Component {
	c := Component{Type: "carousel", Cards: make([]Card, len(cards))}
	for i, comps := range cards {
		c.Cards[i] = Card{CardIndex: i, Components: comps}
	}
	return c
}

// LimitedTimeOffer is a limited-time-offer template's component: the
// offer's expiry, shown as a countdown.
func LimitedTimeOffer(expires time.Time) Component {
	return Component{Type: "limited_time_offer", Parameters: []Parameter{{Type: "limited_time_offer", Offer: &Offer{ExpirationTimeMS: expires.UnixMilli()}}}}
}

// Offer is a limited-time-offer parameter: when the offer expires, in Unix
// milliseconds.
type Offer struct {
	// ExpirationTimeMS is the offer's expiry in Unix milliseconds.
	ExpirationTimeMS int64 `json:"expiration_time_ms"`
}

// Parameter is one template parameter. Build it with TextParam,
// CurrencyParam, ImageParam, ... or fill it. Validate rejects the types
// this package cannot express (a "location" header) rather than send them
// empty.
type Parameter struct {
	// Type is the parameter's type: "text", "currency", "date_time",
	// "image", "document", "video", "payload" (quick-reply buttons),
	// "coupon_code" (copy-code buttons) or "limited_time_offer".
	Type string `json:"type"`
	// Text is a text parameter's value.
	Text string `json:"text,omitempty"`
	// ParameterName names the variable in templates with named parameters.
	ParameterName string `json:"parameter_name,omitempty"`
	// Payload is a quick-reply button's payload.
	Payload string `json:"payload,omitempty"`
	// CouponCode is a copy-code button's code, at most 15 characters.
	CouponCode string `json:"coupon_code,omitempty"`
	// Offer is a limited_time_offer parameter.
	Offer *Offer `json:"limited_time_offer,omitempty"`
	// Image, Document and Video are media header parameters.
	Image    *Media `json:"image,omitempty"`
	Document *Media `json:"document,omitempty"`
	Video    *Media `json:"video,omitempty"`
	// Currency is a currency parameter.
	Currency *Currency `json:"currency,omitempty"`
	// Action is a flow button's "action" parameter (see FlowButton).
	Action *FlowButtonAction `json:"action,omitempty"`
	// DateTime is a date_time parameter's object, passed through as is
	// once Validate found it a JSON object with a fallback_value string.
	DateTime json.RawMessage `json:"date_time,omitempty"`
}

// Currency is a currency template parameter. Amount1000 is the amount
// times 1,000.
type Currency struct {
	// FallbackValue is shown where the currency cannot be localised.
	FallbackValue string `json:"fallback_value"`
	// Code is the ISO 4217 currency code.
	Code string `json:"code"`
	// Amount1000 is the amount times 1,000.
	Amount1000 int64 `json:"amount_1000"`
}

// TextParam is a text parameter.
func TextParam(s string) Parameter { return Parameter{Type: "text", Text: s} }

// NamedTextParam is a named text parameter ({{name}} templates).
func NamedTextParam(name, s string) Parameter {
	return Parameter{Type: "text", ParameterName: name, Text: s}
}

// CurrencyParam is a currency parameter.
func CurrencyParam(fallback, code string, amount1000 int64) Parameter {
	return Parameter{Type: "currency", Currency: &Currency{FallbackValue: fallback, Code: code, Amount1000: amount1000}}
}

// ImageParam is an image header parameter.
func ImageParam(m Media) Parameter { return Parameter{Type: "image", Image: &m} }

// DocumentParam is a document header parameter.
func DocumentParam(m Media) Parameter { return Parameter{Type: "document", Document: &m} }

// VideoParam is a video header parameter.
func VideoParam(m Media) Parameter { return Parameter{Type: "video", Video: &m} }

// Body is a template's body component with the given parameters.
func Body(params ...Parameter) Component { return Component{Type: "body", Parameters: params} }

// Header is a template's header component with the given parameters.
func Header(params ...Parameter) Component { return Component{Type: "header", Parameters: params} }

// URLButton fills the dynamic part of the URL button at index.
func URLButton(index int, suffix string) Component {
	return Component{Type: "button", SubType: "url", Index: &index, Parameters: []Parameter{TextParam(suffix)}}
}

// CopyCodeButton sets the code of the copy-code button at index (at most
// 15 characters).
func CopyCodeButton(index int, code string) Component {
	return Component{Type: "button", SubType: "copy_code", Index: &index, Parameters: []Parameter{{Type: "coupon_code", CouponCode: code}}}
}

// QuickReplyButton sets the payload of the quick-reply button at index.
func QuickReplyButton(index int, payload string) Component {
	return Component{Type: "button", SubType: "quick_reply", Index: &index, Parameters: []Parameter{{Type: "payload", Payload: payload}}}
}

type templatePayload struct {
	Name       string      `json:"name"`
	Language   language    `json:"language"`
	Components []Component `json:"components,omitempty"`
}

type language struct {
	Code string `json:"code"`
}

// Template is a template message: an approved template's name, its
// language code ("en_US", "fr", ...) and components. Set Category to
// CategoryAuthentication for one-time codes (see AuthenticationTemplate).
func Template(to, name, lang string, components ...Component) Message {
	m := Message{to: to, kind: KindTemplate, payload: templatePayload{Name: name, Language: language{Code: lang}, Components: components}}
	m.err = validateTemplate(name, lang, components)
	return m
}

// AuthenticationTemplate is a one-time-code template in Meta's standard
// shape: the code fills the body and the copy-code URL button. It is in
// CategoryAuthentication, so it expires after AuthenticationTTL unless
// ExpiresAt says otherwise.
func AuthenticationTemplate(to, name, lang, code string) Message {
	m := Template(to, name, lang, Body(TextParam(code)), URLButton(0, code))
	m.Category = CategoryAuthentication
	if m.err == nil {
		m.err = checkText("template.code", code, true, 15)
	}
	return m
}

// Template parameter limits, from Meta's "Send message templates" page:
// header text parameters hold at most 60 characters; body parameters 1,024
// when the template has other components and 32,768 in a body-only
// template; named parameters are lowercase letters, digits and underscores.
const (
	maxHeaderParam   = 60
	maxBodyParam     = 1024
	maxBodyOnlyParam = 32768
	maxCouponCode    = 15
)

func validateTemplate(name, lang string, components []Component) error {
	if name == "" || len(name) > 512 {
		return invalid("template.name", "must hold 1 to 512 characters")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return invalid("template.name", "only lowercase letters, digits and underscores")
		}
	}
	if lang == "" || len(lang) > 16 {
		return invalid("template.language.code", "must hold 1 to 16 characters")
	}
	return validateComponents("template.components", components, false)
}

// validateComponents checks a template's components, or (inCard) a
// carousel card's.
func validateComponents(prefix string, components []Component, inCard bool) error {
	bodyOnly := len(components) == 1 && components[0].Type == "body"
	for i, c := range components {
		field := prefix + "[" + strconv.Itoa(i) + "]"
		maxText := 32768
		switch c.Type {
		case "header":
			maxText = maxHeaderParam
		case "body":
			maxText = maxBodyParam
			if bodyOnly {
				maxText = maxBodyOnlyParam
			}
		case "footer":
		case "button":
			if c.Index == nil || *c.Index < 0 || *c.Index > 9 {
				return invalid(field+".index", "a button component needs an index from 0 to 9")
			}
			switch c.SubType {
			case "url", "quick_reply", "copy_code", "flow":
			case "":
				return invalid(field+".sub_type", "a button component needs a sub_type")
			default:
				return invalid(field+".sub_type", "button sub_type "+strconv.Quote(c.SubType)+" is not supported (url, quick_reply, copy_code, flow)")
			}
		case "limited_time_offer":
			if inCard || len(c.Parameters) != 1 || c.Parameters[0].Type != "limited_time_offer" {
				return invalid(field, "a limited_time_offer component holds one limited_time_offer parameter, outside carousels")
			}
		case "carousel":
			if inCard || len(c.Cards) < 1 || len(c.Cards) > 10 {
				return invalid(field+".cards", "a carousel holds 1 to 10 cards, outside carousels")
			}
			for j, card := range c.Cards {
				cf := field + ".cards[" + strconv.Itoa(j) + "]"
				if card.CardIndex != j {
					return invalid(cf+".card_index", "cards are numbered 0, 1, ... in order")
				}
				if err := validateComponents(cf+".components", card.Components, true); err != nil {
					return err
				}
			}
		default:
			return invalid(field+".type", "must be header, body, footer, button, limited_time_offer or carousel")
		}
		if c.Type != "carousel" && len(c.Cards) != 0 {
			return invalid(field+".cards", "only a carousel has cards")
		}
		if err := validateParams(field, c, maxText); err != nil {
			return err
		}
	}
	return nil
}

func validateParams(field string, c Component, maxText int) error {
	named := 0
	names := map[string]bool{}
	for j, p := range c.Parameters {
		pf := field + ".parameters[" + strconv.Itoa(j) + "]"
		if p.ParameterName != "" {
			named++
			if !isParamName(p.ParameterName) {
				return invalid(pf+".parameter_name", "only lowercase letters, digits and underscores")
			}
			if names[p.ParameterName] {
				return invalid(pf+".parameter_name", "duplicate parameter name")
			}
			names[p.ParameterName] = true
		}
		set := 0
		for _, ok := range []bool{p.Text != "", p.Payload != "", p.CouponCode != "", p.Image != nil, p.Document != nil, p.Video != nil, p.Currency != nil, p.DateTime != nil, p.Offer != nil, p.Action != nil} {
			if ok {
				set++
			}
		}
		var err error
		switch p.Type {
		case "text":
			err = checkText(pf+".text", p.Text, true, maxText)
		case "payload":
			err = checkText(pf+".payload", p.Payload, true, 1000)
		case "coupon_code":
			err = checkText(pf+".coupon_code", p.CouponCode, true, maxCouponCode)
		case "image", "document", "video":
			m := map[string]*Media{"image": p.Image, "document": p.Document, "video": p.Video}[p.Type]
			if m == nil {
				return invalid(pf+"."+p.Type, "missing")
			}
			err = m.validate(pf + "." + p.Type)
		case "currency":
			err = validateCurrency(pf+".currency", p.Currency)
		case "date_time":
			err = validateDateTime(pf+".date_time", p.DateTime)
		case "limited_time_offer":
			if p.Offer == nil || p.Offer.ExpirationTimeMS <= 0 {
				return invalid(pf+".limited_time_offer.expiration_time_ms", "required, in Unix milliseconds")
			}
		case "action":
			err = validateFlowButtonAction(pf+".action", c, p.Action)
		case "":
			return invalid(pf+".type", "empty")
		default:
			return invalid(pf+".type", "parameter type "+strconv.Quote(p.Type)+" is not supported (location headers cannot be expressed)")
		}
		if err != nil {
			return err
		}
		if set != 1 {
			return invalid(pf, "set exactly the field of its type "+strconv.Quote(p.Type))
		}
	}
	if named != 0 && named != len(c.Parameters) {
		return invalid(field+".parameters", "mixes named and positional parameters")
	}
	return nil
}

func isParamName(s string) bool {
	if len(s) > 512 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func validateCurrency(field string, c *Currency) error {
	if c == nil {
		return invalid(field, "missing")
	}
	if err := checkText(field+".fallback_value", c.FallbackValue, true, 1024); err != nil {
		return err
	}
	if len(c.Code) != 3 || strings.ToUpper(c.Code) != c.Code || strings.ContainsFunc(c.Code, func(r rune) bool { return r < 'A' || r > 'Z' }) {
		return invalid(field+".code", "must be an ISO 4217 code such as USD")
	}
	return nil
}

// validateDateTime checks a date_time object: JSON, an object, with a
// non-empty fallback_value string (Meta's required member).
func validateDateTime(field string, raw json.RawMessage) error {
	if raw == nil {
		return invalid(field, "missing")
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return invalid(field, "must be a JSON object")
	}
	var fb string
	if json.Unmarshal(obj["fallback_value"], &fb) != nil || strings.TrimSpace(fb) == "" {
		return invalid(field+".fallback_value", "required string")
	}
	return checkText(field+".fallback_value", fb, true, 1024)
}

// Media names a media object by the ID of an uploaded asset or by a public
// HTTP(S) link, with an optional caption and (documents) file name.
type Media struct {
	// ID is an uploaded asset's media ID.
	ID string `json:"id,omitempty"`
	// Link is a public http or https URL of the media.
	Link string `json:"link,omitempty"`
	// Caption, at most 1,024 characters, for images, videos and documents.
	Caption string `json:"caption,omitempty"`
	// Filename is a document's file name.
	Filename string `json:"filename,omitempty"`
}

func (m Media) validate(field string) error {
	switch {
	case (m.ID == "") == (m.Link == ""):
		return invalid(field, "set exactly one of media id and link")
	case m.Link != "":
		u, err := url.Parse(m.Link)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return invalid(field+".link", "not an http or https URL")
		}
	}
	if err := checkText(field+".caption", m.Caption, false, 1024); err != nil {
		return err
	}
	return checkText(field+".filename", m.Filename, false, 240)
}

func media(to string, kind Kind, m Media, captions bool) Message {
	msg := Message{to: to, kind: kind, payload: m, err: m.validate(string(kind))}
	if msg.err == nil && !captions && (m.Caption != "" || m.Filename != "") {
		msg.err = invalid(string(kind)+".caption", "not allowed for "+string(kind))
	}
	if msg.err == nil && kind != KindDocument && m.Filename != "" {
		msg.err = invalid(string(kind)+".filename", "only documents have a file name")
	}
	return msg
}

// Image is an image message (caption allowed).
func Image(to string, m Media) Message { return media(to, KindImage, m, true) }

// Document is a document message (caption and file name allowed).
func Document(to string, m Media) Message { return media(to, KindDocument, m, true) }

// Audio is an audio message (no caption).
func Audio(to string, m Media) Message { return media(to, KindAudio, m, false) }

// Video is a video message (caption allowed).
func Video(to string, m Media) Message { return media(to, KindVideo, m, true) }

// Sticker is a sticker message (no caption).
func Sticker(to string, m Media) Message { return media(to, KindSticker, m, false) }

// Button is one reply button: an ID returned in the user's reply (1 to 256
// characters) and a title (1 to 20 characters).
type Button struct {
	// ID comes back in the user's reply.
	ID string
	// Title is the button's text.
	Title string
}

type interactivePayload struct {
	Type   string         `json:"type"`
	Header map[string]any `json:"header,omitempty"`
	Body   struct {
		Text string `json:"text"`
	} `json:"body"`
	Footer *struct {
		Text string `json:"text"`
	} `json:"footer,omitempty"`
	Action any `json:"action"`
}

type replyButton struct {
	Type  string `json:"type"`
	Reply struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	} `json:"reply"`
}

// Buttons is an interactive message with 1 to 3 reply buttons and a body
// of 1 to 1,024 characters. Button IDs must be distinct, and so must their
// titles.
func Buttons(to, body string, buttons ...Button) Message {
	p := interactivePayload{Type: "button"}
	p.Body.Text = body
	bs := make([]replyButton, len(buttons))
	for i, b := range buttons {
		bs[i].Type = "reply"
		bs[i].Reply.ID, bs[i].Reply.Title = b.ID, b.Title
	}
	p.Action = map[string]any{"buttons": bs}
	m := Message{to: to, kind: KindInteractive, payload: p}
	m.err = validateButtons(body, buttons)
	return m
}

func validateButtons(body string, buttons []Button) error {
	if err := checkText("interactive.body.text", body, true, 1024); err != nil {
		return err
	}
	if len(buttons) < 1 || len(buttons) > 3 {
		return invalid("interactive.action.buttons", strconv.Itoa(len(buttons))+" buttons, want 1 to 3")
	}
	ids, titles := map[string]bool{}, map[string]bool{}
	for i, b := range buttons {
		f := "interactive.action.buttons[" + strconv.Itoa(i) + "]"
		if err := checkText(f+".reply.id", b.ID, true, 256); err != nil {
			return err
		}
		if err := checkText(f+".reply.title", b.Title, true, 20); err != nil {
			return err
		}
		if ids[b.ID] {
			return invalid(f+".reply.id", "duplicate button id")
		}
		if titles[b.Title] {
			return invalid(f+".reply.title", "duplicate button title")
		}
		ids[b.ID], titles[b.Title] = true, true
	}
	return nil
}

// Section is one section of a list message: a title (required when there
// are several sections, at most 24 characters) and its rows.
type Section struct {
	// Title heads the section.
	Title string `json:"title,omitempty"`
	// Rows are the section's choices.
	Rows []Row `json:"rows"`
}

// Row is one choice of a list: an ID (1 to 200 characters), a title (1 to
// 24) and an optional description (at most 72).
type Row struct {
	// ID comes back in the user's reply.
	ID string `json:"id"`
	// Title is the choice's text.
	Title string `json:"title"`
	// Description is shown under the title.
	Description string `json:"description,omitempty"`
}

// List is an interactive list message: a body (1 to 4,096 characters), the
// text of the button that opens the list (1 to 20), and 1 to 10 sections
// holding 1 to 10 rows in all, with distinct row IDs.
func List(to, body, button string, sections ...Section) Message {
	p := interactivePayload{Type: "list"}
	p.Body.Text = body
	p.Action = map[string]any{"button": button, "sections": sections}
	m := Message{to: to, kind: KindInteractive, payload: p}
	m.err = validateList(body, button, sections)
	return m
}

func validateList(body, button string, sections []Section) error {
	if err := checkText("interactive.body.text", body, true, 4096); err != nil {
		return err
	}
	if err := checkText("interactive.action.button", button, true, 20); err != nil {
		return err
	}
	if len(sections) < 1 || len(sections) > 10 {
		return invalid("interactive.action.sections", strconv.Itoa(len(sections))+" sections, want 1 to 10")
	}
	rows := 0
	seen := map[string]bool{}
	for i, s := range sections {
		f := "interactive.action.sections[" + strconv.Itoa(i) + "]"
		if err := checkText(f+".title", s.Title, len(sections) > 1, 24); err != nil {
			return err
		}
		if len(s.Rows) == 0 {
			return invalid(f+".rows", "a section needs at least one row")
		}
		for j, r := range s.Rows {
			rf := f + ".rows[" + strconv.Itoa(j) + "]"
			if err := checkText(rf+".id", r.ID, true, 200); err != nil {
				return err
			}
			if err := checkText(rf+".title", r.Title, true, 24); err != nil {
				return err
			}
			if err := checkText(rf+".description", r.Description, false, 72); err != nil {
				return err
			}
			if seen[r.ID] {
				return invalid(rf+".id", "duplicate row id")
			}
			seen[r.ID] = true
			rows++
		}
	}
	if rows > 10 {
		return invalid("interactive.action.sections", strconv.Itoa(rows)+" rows in all, at most 10")
	}
	return nil
}

type locationPayload struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
	Name      string  `json:"name,omitempty"`
	Address   string  `json:"address,omitempty"`
}

// Location is a location message.
func Location(to string, latitude, longitude float64, name, address string) Message {
	m := Message{to: to, kind: KindLocation, payload: locationPayload{latitude, longitude, name, address}}
	switch {
	case math.IsNaN(latitude) || latitude < -90 || latitude > 90:
		m.err = invalid("location.latitude", "must be from -90 to 90")
	case math.IsNaN(longitude) || longitude < -180 || longitude > 180:
		m.err = invalid("location.longitude", "must be from -180 to 180")
	default:
		if m.err = checkText("location.name", name, false, 1000); m.err == nil {
			m.err = checkText("location.address", address, false, 1000)
		}
	}
	return m
}

type reactionPayload struct {
	MessageID string `json:"message_id"`
	Emoji     string `json:"emoji"`
}

// Reaction reacts to message messageID with emoji; an empty emoji removes
// the reaction.
func Reaction(to, messageID, emoji string) Message {
	m := Message{to: to, kind: KindReaction, payload: reactionPayload{messageID, emoji}, msgID: messageID}
	if err := checkText("reaction.message_id", messageID, true, 512); err != nil {
		m.err = err
	} else if err := checkText("reaction.emoji", emoji, false, 16); err != nil {
		m.err = err
	}
	return m
}

type readPayload struct {
	MessagingProduct string            `json:"messaging_product"`
	Status           string            `json:"status"`
	MessageID        string            `json:"message_id"`
	TypingIndicator  map[string]string `json:"typing_indicator,omitempty"`
}

// MarkRead marks inbound message messageID as read and, with typing, shows
// the user a typing indicator until the next message (or about 25 seconds).
// It is not a message to the user: the pair limit and the tier do not apply.
func MarkRead(messageID string, typing bool) Message {
	p := readPayload{MessagingProduct: "whatsapp", Status: "read", MessageID: messageID}
	if typing {
		p.TypingIndicator = map[string]string{"type": "text"}
	}
	m := Message{kind: KindRead, payload: p, msgID: messageID}
	m.err = checkText("message_id", messageID, true, 512)
	return m
}

type voicePayload struct {
	Media
	Voice bool `json:"voice"`
}

// Voice is a voice note: an audio message (an OGG file with the OPUS codec,
// per Meta's "Audio messages" page) that WhatsApp plays as recorded speech,
// with "voice": true.
func Voice(to string, m Media) Message {
	msg := media(to, KindAudio, m, false)
	msg.payload = voicePayload{Media: m, Voice: true}
	return msg
}

type ctaAction struct {
	Name       string `json:"name"`
	Parameters struct {
		DisplayText string `json:"display_text"`
		URL         string `json:"url"`
	} `json:"parameters"`
}

// CallToAction is an interactive call-to-action URL button message
// (cta_url): a body of 1 to 1,024 characters and one button showing
// displayText (1 to 20 characters) that opens link (http or https).
func CallToAction(to, body, displayText, link string) Message {
	p := interactivePayload{Type: "cta_url"}
	p.Body.Text = body
	a := ctaAction{Name: "cta_url"}
	a.Parameters.DisplayText, a.Parameters.URL = displayText, link
	p.Action = a
	m := Message{to: to, kind: KindInteractive, payload: p}
	if m.err = checkText("interactive.body.text", body, true, 1024); m.err == nil {
		m.err = checkText("interactive.action.parameters.display_text", displayText, true, 20)
	}
	if m.err == nil {
		if u, err := url.Parse(link); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			m.err = invalid("interactive.action.parameters.url", "not an http or https URL")
		}
	}
	return m
}

// LocationRequest is an interactive location request message: a body of 1
// to 1,024 characters and a "Send location" button; the user's location
// comes back as an inbound location message.
func LocationRequest(to, body string) Message {
	p := interactivePayload{Type: "location_request_message"}
	p.Body.Text = body
	p.Action = map[string]string{"name": "send_location"}
	m := Message{to: to, kind: KindInteractive, payload: p}
	m.err = checkText("interactive.body.text", body, true, 1024)
	return m
}

// WithFooter returns m with a footer of 1 to 60 characters. Only
// interactive messages (Buttons, List, CallToAction, FlowMessage) have footers; for
// other messages Validate reports an error.
func (m Message) WithFooter(text string) Message {
	p, ok := m.payload.(interactivePayload)
	if !ok || p.Type == "location_request_message" {
		return m.withErr(invalid("interactive.footer", "only button, list and call-to-action messages have a footer"))
	}
	p.Footer = &struct {
		Text string `json:"text"`
	}{text}
	m.payload = p
	return m.withErr(checkText("interactive.footer.text", text, true, 60))
}

// WithHeader returns m with a header: a text of 1 to 60 characters (List,
// FlowMessage: text only), or, for Buttons and CallToAction only, an image, video or document (set one
// of text and media; kind is KindImage, KindVideo or KindDocument).
func (m Message) WithHeader(text string, kind Kind, media *Media) Message {
	p, ok := m.payload.(interactivePayload)
	if !ok || p.Type == "location_request_message" {
		return m.withErr(invalid("interactive.header", "only button, list and call-to-action messages have a header"))
	}
	switch {
	case (text == "") == (media == nil):
		return m.withErr(invalid("interactive.header", "set exactly one of text and media"))
	case media == nil:
		p.Header = map[string]any{"type": "text", "text": text}
		m.payload = p
		return m.withErr(checkText("interactive.header.text", text, true, 60))
	case p.Type == "list" || p.Type == "flow":
		return m.withErr(invalid("interactive.header", "a list or flow message's header is text only"))
	case kind != KindImage && kind != KindVideo && kind != KindDocument:
		return m.withErr(invalid("interactive.header.type", "must be image, video or document"))
	}
	p.Header = map[string]any{"type": string(kind), string(kind): *media}
	m.payload = p
	return m.withErr(media.validate("interactive.header." + string(kind)))
}

// withErr records err as m's validation error unless m already has one.
func (m Message) withErr(err error) Message {
	if m.err == nil {
		m.err = err
	}
	return m
}

// ContactCard is one contact of a contacts message: a name (FormattedName
// is required) and the ways to reach them.
type ContactCard struct {
	// FormattedName is the name shown, required.
	FormattedName string
	// FirstName and LastName are optional parts of the name.
	FirstName, LastName string
	// Phones are the contact's phone numbers.
	Phones []string
	// Emails are the contact's e-mail addresses.
	Emails []string
}

// MarshalJSON encodes the card as Meta's contact object.
func (c ContactCard) MarshalJSON() ([]byte, error) {
	type name struct {
		FormattedName string `json:"formatted_name"`
		FirstName     string `json:"first_name,omitempty"`
		LastName      string `json:"last_name,omitempty"`
	}
	type phone struct {
		Phone string `json:"phone"`
	}
	type email struct {
		Email string `json:"email"`
	}
	out := struct {
		Name   name    `json:"name"`
		Phones []phone `json:"phones,omitempty"`
		Emails []email `json:"emails,omitempty"`
	}{Name: name{c.FormattedName, c.FirstName, c.LastName}}
	for _, p := range c.Phones {
		out.Phones = append(out.Phones, phone{p})
	}
	for _, e := range c.Emails {
		out.Emails = append(out.Emails, email{e})
	}
	return json.Marshal(out)
}

// Contacts is a contacts message carrying 1 to 257 contact cards.
func Contacts(to string, cards ...ContactCard) Message {
	m := Message{to: to, kind: KindContacts, payload: cards}
	if len(cards) < 1 || len(cards) > 257 {
		m.err = invalid("contacts", strconv.Itoa(len(cards))+" cards, want 1 to 257")
		return m
	}
	for i, c := range cards {
		f := "contacts[" + strconv.Itoa(i) + "]"
		for _, e := range []error{
			checkText(f+".name.formatted_name", c.FormattedName, true, 512),
			checkText(f+".name.first_name", c.FirstName, false, 512),
			checkText(f+".name.last_name", c.LastName, false, 512),
		} {
			if e != nil {
				m.err = e
				return m
			}
		}
		for j, p := range c.Phones {
			if err := checkText(f+".phones["+strconv.Itoa(j)+"].phone", p, true, 64); err != nil {
				m.err = err
				return m
			}
		}
		for j, e := range c.Emails {
			if err := checkText(f+".emails["+strconv.Itoa(j)+"].email", e, true, 320); err != nil {
				m.err = err
				return m
			}
		}
	}
	return m
}
