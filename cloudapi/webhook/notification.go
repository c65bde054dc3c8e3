package webhook

import (
	"encoding/json"
	"reflect"

	"github.com/wapace/wapace/errcodes"
)

// Webhook payloads, as Meta documents them on its webhooks reference pages
// (messages, statuses, message_template_status_update,
// phone_number_quality_update, account_update and the other fields of the
// whatsapp_business_account object).
//
// Every type below is decoded leniently by [Parse]: a field that
// does not fit its Go type (a numeric timestamp where Meta documents a
// string, an error object without a code) is reported as a [*FieldError] on
// the item it belongs to, the rest of the item is delivered, and the field's
// raw JSON is kept in the item's Extra. Keys wapace has no field for are kept
// in Extra too, and MarshalJSON re-encodes typed fields plus Extra, so that no
// key Meta sent is lost between the wire and the application.

// Notification is one webhook delivery.
type Notification struct {
	Object string  `json:"object"`
	Entry  []Entry `json:"entry"`
	// Problems lists every field, anywhere in the notification, that did not
	// fit its typed field. The items they belong to are delivered regardless.
	Problems []*FieldError `json:"-"`
	// Extra holds keys without a typed field, and keys whose value did not
	// fit one, exactly as sent.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes n with its Extra keys.
func (n Notification) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(n)) }

// Entry is one WhatsApp Business Account's changes.
type Entry struct {
	// ID is the WhatsApp Business Account ID.
	ID string `json:"id"`
	// Time is the entry's Unix time, when Meta sends one (see
	// [Event.Time] for it as a time.Time).
	Time    int64    `json:"time,omitempty"`
	Changes []Change `json:"changes"`
	// Extra holds keys without a typed field, exactly as sent.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes e with its Extra keys.
func (e Entry) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(e)) }

// Webhook fields wapace decodes into typed values. Every other field (such
// as account_alerts, security, partner_solutions) is delivered with its raw
// value only.
const (
	FieldMessages         = "messages"
	FieldTemplateStatus   = "message_template_status_update"
	FieldQuality          = "phone_number_quality_update"
	FieldAccountUpdate    = "account_update"
	FieldUserPreferences  = "user_preferences"
	FieldMessageEchoes    = "smb_message_echoes"
	FieldCapability       = "business_capability_update"
	FieldTemplateCategory = "template_category_update"
)

// Change is one change of one webhook field. Raw always holds the value as
// sent; the typed member matching Field is set when the field is one wapace
// decodes: Value for messages-shaped fields (messages, user_preferences,
// smb_message_echoes, calls, history), TemplateStatus, Quality, Capability
// or Account for the others.
type Change struct {
	// Field is the webhook field, such as "messages".
	Field string `json:"field"`
	// Raw is the change's value exactly as sent.
	Raw json.RawMessage `json:"value"`
	// Value is the decoded value of a messages-shaped field, or nil.
	Value *Value `json:"-"`
	// TemplateStatus is the decoded message_template_status_update, or nil.
	TemplateStatus *TemplateStatusUpdate `json:"-"`
	// Quality is the decoded phone_number_quality_update, or nil.
	Quality *QualityUpdate `json:"-"`
	// Capability is the decoded business_capability_update, or nil.
	Capability *CapabilityUpdate `json:"-"`
	// Account is the decoded account_update, or nil.
	Account *AccountUpdate `json:"-"`
	// TemplateCategory is the decoded template_category_update, or nil.
	TemplateCategory *TemplateCategoryUpdate `json:"-"`
	// Problems lists the fields of this change that did not fit their typed
	// fields, including items that could not be decoded at all.
	Problems []*FieldError `json:"-"`
	// Extra holds keys beside field and value, exactly as sent.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes c as sent: field, the raw value and Extra.
func (c Change) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(c)) }

// messagesShaped lists the fields whose value has the messages layout
// (metadata, contacts, messages, statuses, errors, ...).
var messagesShaped = map[string]bool{
	FieldMessages: true, FieldUserPreferences: true, FieldMessageEchoes: true,
	"calls": true, "history": true,
}

// Value is the value of a messages-shaped change.
type Value struct {
	MessagingProduct string    `json:"messaging_product,omitempty"`
	Metadata         Metadata  `json:"metadata"`
	Contacts         []Contact `json:"contacts,omitempty"`
	// Messages are messages users sent.
	Messages []Message `json:"messages,omitempty"`
	// Statuses report the progress of messages the business sent, and of
	// calls (Status.Type "call").
	Statuses []Status `json:"statuses,omitempty"`
	// MessageEchoes are messages the business sent from the WhatsApp
	// Business app (field smb_message_echoes).
	MessageEchoes []Message `json:"message_echoes,omitempty"`
	// UserPreferences are users' marketing preferences (field
	// user_preferences), such as a marketing opt-out.
	UserPreferences []UserPreference `json:"user_preferences,omitempty"`
	// Errors are errors not tied to one message (value.errors[]).
	Errors []errcodes.Error `json:"errors,omitempty"`
	// Extra holds keys without a typed field (calls, history, groups, ...)
	// and keys whose value did not fit one, exactly as sent.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes v with its Extra keys.
func (v Value) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(v)) }

// Metadata names the business number the change is about.
type Metadata struct {
	DisplayPhoneNumber string `json:"display_phone_number"`
	PhoneNumberID      string `json:"phone_number_id"`
	// Extra holds keys without a typed field, exactly as sent.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes m with its Extra keys.
func (m Metadata) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(m)) }

// Contact is a user a change is about. A user with a username may come
// without a phone number: then WaID is empty and UserID holds the
// business-scoped user ID (such as "CO.1949266959121697").
type Contact struct {
	WaID string `json:"wa_id,omitempty"`
	// UserID is the user's business-scoped user ID (BSUID).
	UserID string `json:"user_id,omitempty"`
	// ParentUserID is the BSUID at the parent business portfolio level,
	// when Meta sends one.
	ParentUserID string  `json:"parent_user_id,omitempty"`
	Profile      Profile `json:"profile"`
	// Extra holds keys without a typed field, exactly as sent.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes c with its Extra keys.
func (c Contact) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(c)) }

// Profile is a contact's public profile.
type Profile struct {
	Name string `json:"name,omitempty"`
	// Username is the user's WhatsApp username, when they have one.
	Username string `json:"username,omitempty"`
	// Extra holds keys without a typed field, exactly as sent.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes p with its Extra keys.
func (p Profile) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(p)) }

// Message is a message a user sent (or, in MessageEchoes, one the
// business sent from the WhatsApp Business app). The member named by Type
// holds its content; Media returns the media of any media type.
type Message struct {
	// From is the sender's phone number; empty for a user who hides it
	// behind a username, whose BSUID is then in FromUserID.
	From             string `json:"from,omitempty"`
	FromUserID       string `json:"from_user_id,omitempty"`
	FromParentUserID string `json:"from_parent_user_id,omitempty"`
	// To is the recipient of a message echo.
	To        string `json:"to,omitempty"`
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	// GroupID is the group the message was sent in, for group messages.
	GroupID     string          `json:"group_id,omitempty"`
	Context     *MessageContext `json:"context,omitempty"`
	Text        *Text           `json:"text,omitempty"`
	Image       *Media          `json:"image,omitempty"`
	Video       *Media          `json:"video,omitempty"`
	Audio       *Media          `json:"audio,omitempty"`
	Document    *Media          `json:"document,omitempty"`
	Sticker     *Media          `json:"sticker,omitempty"`
	Location    *Location       `json:"location,omitempty"`
	Interactive *Interactive    `json:"interactive,omitempty"`
	Button      *Button         `json:"button,omitempty"`
	Referral    *Referral       `json:"referral,omitempty"`
	Order       *Order          `json:"order,omitempty"`
	Reaction    *Reaction       `json:"reaction,omitempty"`
	// System is a system message: the user changed their phone number
	// (Type "user_changed_number") or their BSUID ("user_changed_user_id").
	System *System `json:"system,omitempty"`
	// Errors are errors about this message (messages[].errors[]), such as
	// an unsupported message type.
	Errors []errcodes.Error `json:"errors,omitempty"`
	// Problems lists this message's fields that did not fit their typed
	// fields; the message is delivered with the rest.
	Problems []*FieldError `json:"-"`
	// Extra holds keys without a typed field (contacts, unsupported, ...)
	// and keys whose value did not fit one, exactly as sent.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes m with its Extra keys.
func (m Message) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(m)) }

// Media returns the media of an image, video, audio, document or sticker
// message, or nil.
func (m *Message) Media() *Media {
	for _, p := range []*Media{m.Image, m.Video, m.Audio, m.Document, m.Sticker} {
		if p != nil {
			return p
		}
	}
	return nil
}

// ReplyTo returns the ID of the message this one replies to, or "". A
// forwarded message has a context without an ID: it is not a reply.
func (m *Message) ReplyTo() string {
	if m.Context == nil {
		return ""
	}
	return m.Context.ID
}

// Sender returns who sent m: the phone number, or the BSUID of a user
// without one.
func (m *Message) Sender() string {
	if m.From != "" {
		return m.From
	}
	return m.FromUserID
}

// MessageContext is an inbound message's context: the message it replies to,
// or the fact that it was forwarded.
type MessageContext struct {
	// From and ID name the message replied to; both empty when the context
	// only says the message was forwarded.
	From string `json:"from,omitempty"`
	ID   string `json:"id,omitempty"`
	// Forwarded reports whether the message was forwarded.
	Forwarded bool `json:"forwarded,omitempty"`
	// FrequentlyForwarded reports whether it was forwarded more than five
	// times.
	FrequentlyForwarded bool `json:"frequently_forwarded,omitempty"`
	// ReferredProduct is the catalog product the user asked about.
	ReferredProduct *ReferredProduct `json:"referred_product,omitempty"`
	// Extra holds keys without a typed field, exactly as sent.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes c with its Extra keys.
func (c MessageContext) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(c)) }

// ReferredProduct is a product a message refers to.
type ReferredProduct struct {
	CatalogID         string                     `json:"catalog_id,omitempty"`
	ProductRetailerID string                     `json:"product_retailer_id,omitempty"`
	Extra             map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes p with its Extra keys.
func (p ReferredProduct) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(p)) }

// Text is a text message's content.
type Text struct {
	Body  string                     `json:"body"`
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes t with its Extra keys.
func (t Text) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(t)) }

// Media is the content of an image, video, audio, document or sticker
// message: fetch the file with its ID.
type Media struct {
	ID       string `json:"id,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Caption  string `json:"caption,omitempty"`
	Filename string `json:"filename,omitempty"`
	// Voice reports whether an audio message is a voice note.
	Voice bool `json:"voice,omitempty"`
	// Animated reports whether a sticker is animated.
	Animated bool `json:"animated,omitempty"`
	// URL is a download URL, when Meta includes one.
	URL   string                     `json:"url,omitempty"`
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes m with its Extra keys.
func (m Media) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(m)) }

// Location is a location message's content.
type Location struct {
	Latitude  float64                    `json:"latitude"`
	Longitude float64                    `json:"longitude"`
	Name      string                     `json:"name,omitempty"`
	Address   string                     `json:"address,omitempty"`
	URL       string                     `json:"url,omitempty"`
	Extra     map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes l with its Extra keys.
func (l Location) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(l)) }

// Interactive is a user's answer to an interactive message: a reply button
// (ButtonReply), a list row (ListReply) or a flow (NFMReply), per Type.
type Interactive struct {
	Type        string            `json:"type"`
	ButtonReply *InteractiveReply `json:"button_reply,omitempty"`
	ListReply   *InteractiveReply `json:"list_reply,omitempty"`
	NFMReply    *FlowReply        `json:"nfm_reply,omitempty"`
	// Extra holds keys without a typed field, exactly as sent.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes i with its Extra keys.
func (i Interactive) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(i)) }

// InteractiveReply is the button or list row a user chose.
type InteractiveReply struct {
	ID          string                     `json:"id"`
	Title       string                     `json:"title,omitempty"`
	Description string                     `json:"description,omitempty"`
	Extra       map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes r with its Extra keys.
func (r InteractiveReply) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(r)) }

// FlowReply is a completed flow's answer; ResponseJSON is the flow's
// response, a JSON document in a string.
type FlowReply struct {
	Name         string                     `json:"name,omitempty"`
	Body         string                     `json:"body,omitempty"`
	ResponseJSON string                     `json:"response_json,omitempty"`
	Extra        map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes r with its Extra keys.
func (r FlowReply) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(r)) }

// Button is a tap on a template's quick-reply button.
type Button struct {
	Payload string                     `json:"payload,omitempty"`
	Text    string                     `json:"text,omitempty"`
	Extra   map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes b with its Extra keys.
func (b Button) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(b)) }

// Referral says which ad or post led the user to write (click-to-WhatsApp).
type Referral struct {
	SourceURL    string `json:"source_url,omitempty"`
	SourceID     string `json:"source_id,omitempty"`
	SourceType   string `json:"source_type,omitempty"`
	Headline     string `json:"headline,omitempty"`
	Body         string `json:"body,omitempty"`
	MediaType    string `json:"media_type,omitempty"`
	ImageURL     string `json:"image_url,omitempty"`
	VideoURL     string `json:"video_url,omitempty"`
	ThumbnailURL string `json:"thumbnail_url,omitempty"`
	// CtwaClid is the click ID of a click-to-WhatsApp ad.
	CtwaClid string                     `json:"ctwa_clid,omitempty"`
	Extra    map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes r with its Extra keys.
func (r Referral) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(r)) }

// Order is a cart the user sent from a catalog.
type Order struct {
	CatalogID    string                     `json:"catalog_id,omitempty"`
	Text         string                     `json:"text,omitempty"`
	ProductItems []OrderItem                `json:"product_items,omitempty"`
	Extra        map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes o with its Extra keys.
func (o Order) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(o)) }

// OrderItem is one line of an Order.
type OrderItem struct {
	ProductRetailerID string                     `json:"product_retailer_id,omitempty"`
	Quantity          int64                      `json:"quantity"`
	ItemPrice         float64                    `json:"item_price"`
	Currency          string                     `json:"currency,omitempty"`
	Extra             map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes i with its Extra keys.
func (i OrderItem) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(i)) }

// System is a system message's content. Keys beyond these (the new
// BSUID, say) are kept in Extra.
type System struct {
	Body    string                     `json:"body,omitempty"`
	Type    string                     `json:"type,omitempty"`
	NewWaID string                     `json:"new_wa_id,omitempty"`
	Extra   map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes s with its Extra keys.
func (s System) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(s)) }

// Reaction is an emoji reaction to a message; an empty Emoji removes it.
type Reaction struct {
	MessageID string                     `json:"message_id,omitempty"`
	Emoji     string                     `json:"emoji,omitempty"`
	Extra     map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes r with its Extra keys.
func (r Reaction) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(r)) }

// Status reports a sent message's progress. Status is "sent", "delivered",
// "read", "played" (a voice message was played), "failed" with Errors, or,
// for a call (Type "call"), the call's state.
type Status struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Timestamp   string `json:"timestamp"`
	RecipientID string `json:"recipient_id,omitempty"`
	// RecipientUserID is the recipient's BSUID; RecipientID may then be
	// empty.
	RecipientUserID       string `json:"recipient_user_id,omitempty"`
	ParentRecipientUserID string `json:"parent_recipient_user_id,omitempty"`
	// RecipientType is "individual" or "group".
	RecipientType string `json:"recipient_type,omitempty"`
	// RecipientParticipantID is the group member a group status is about.
	RecipientParticipantID string `json:"recipient_participant_id,omitempty"`
	// Type is "call" for call statuses; empty for message statuses.
	Type string `json:"type,omitempty"`
	// CallbackData is the biz_opaque_callback_data sent with the message.
	CallbackData string        `json:"biz_opaque_callback_data,omitempty"`
	Conversation *Conversation `json:"conversation,omitempty"`
	Pricing      *Pricing      `json:"pricing,omitempty"`
	// Errors say why a message failed; classify them with Class.
	Errors []errcodes.Error `json:"errors,omitempty"`
	// Problems lists this status's fields that did not fit their typed
	// fields; the status is delivered with the rest.
	Problems []*FieldError `json:"-"`
	// Extra holds keys without a typed field, exactly as sent.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes s with its Extra keys.
func (s Status) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(s)) }

// Conversation is the conversation a status's message opened or belongs to.
type Conversation struct {
	ID                  string `json:"id,omitempty"`
	ExpirationTimestamp string `json:"expiration_timestamp,omitempty"`
	Origin              struct {
		Type string `json:"type"`
	} `json:"origin"`
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes c with its Extra keys.
func (c Conversation) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(c)) }

// Pricing is how a status's message is billed.
type Pricing struct {
	Billable     bool                       `json:"billable"`
	PricingModel string                     `json:"pricing_model,omitempty"`
	Category     string                     `json:"category,omitempty"`
	Type         string                     `json:"type,omitempty"`
	Extra        map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes p with its Extra keys.
func (p Pricing) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(p)) }

// UserPreference is a user's marketing preference (field user_preferences):
// Category "marketing_messages" with Value "stop" is an opt-out, "resume"
// an opt-in.
type UserPreference struct {
	WaID         string                     `json:"wa_id,omitempty"`
	UserID       string                     `json:"user_id,omitempty"`
	ParentUserID string                     `json:"parent_user_id,omitempty"`
	Detail       string                     `json:"detail,omitempty"`
	Category     string                     `json:"category,omitempty"`
	Value        string                     `json:"value,omitempty"`
	Timestamp    string                     `json:"timestamp,omitempty"`
	Extra        map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes p with its Extra keys.
func (p UserPreference) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(p)) }

// TemplateStatusUpdate is a message_template_status_update: Event is
// "APPROVED", "REJECTED", "PAUSED", "DISABLED", "PENDING_DELETION" and so on.
type TemplateStatusUpdate struct {
	Event            string                     `json:"event"`
	TemplateID       string                     `json:"message_template_id"`
	TemplateName     string                     `json:"message_template_name,omitempty"`
	TemplateLanguage string                     `json:"message_template_language,omitempty"`
	TemplateCategory string                     `json:"message_template_category,omitempty"`
	Reason           string                     `json:"reason,omitempty"`
	DisableDate      string                     `json:"disable_date,omitempty"`
	Extra            map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes u with its Extra keys.
func (u TemplateStatusUpdate) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(u)) }

// TemplateCategoryUpdate is a template_category_update: a template's
// category is going to change (an impending notice: CorrectCategory and
// CategoryUpdateTimestamp are set, and NewCategory holds the category in
// force until then) or has changed (a completed notice: PreviousCategory
// and NewCategory). Meta's categories are "MARKETING", "UTILITY" and
// "AUTHENTICATION". Route on NewCategory of a completed notice only
// (Completed); an impending notice is information.
type TemplateCategoryUpdate struct {
	TemplateID       string `json:"message_template_id"`
	TemplateName     string `json:"message_template_name,omitempty"`
	TemplateLanguage string `json:"message_template_language,omitempty"`
	// PreviousCategory is the category before a completed change.
	PreviousCategory string `json:"previous_category,omitempty"`
	// NewCategory is the new category of a completed change, or, in an
	// impending notice, the category still in force.
	NewCategory string `json:"new_category,omitempty"`
	// CorrectCategory is the category an impending change will set.
	CorrectCategory string `json:"correct_category,omitempty"`
	// CategoryUpdateTimestamp is the Unix time an impending change takes
	// effect.
	CategoryUpdateTimestamp int64                      `json:"category_update_timestamp,omitempty"`
	Extra                   map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes u with its Extra keys.
func (u TemplateCategoryUpdate) MarshalJSON() ([]byte, error) {
	return encodeObject(reflect.ValueOf(u))
}

// Impending reports whether u announces a change to come: the template's
// category is not changed yet, and NewCategory is not the category to
// route on.
func (u *TemplateCategoryUpdate) Impending() bool {
	return u.CorrectCategory != "" || u.CategoryUpdateTimestamp != 0
}

// Completed reports whether u reports a change that took effect, so that
// NewCategory is the template's latest category.
func (u *TemplateCategoryUpdate) Completed() bool {
	return !u.Impending() && u.NewCategory != ""
}

// QualityUpdate is a phone_number_quality_update: the number's quality
// rating changed (Event "FLAGGED", "UNFLAGGED") or its messaging limit did
// ("UPGRADE", "DOWNGRADE", "ONBOARDING"). CurrentLimit is Meta's name for
// the limit, such as "TIER_2K" or "TIER_UNLIMITED"; see [TierLimit].
type QualityUpdate struct {
	DisplayPhoneNumber string `json:"display_phone_number,omitempty"`
	Event              string `json:"event"`
	CurrentLimit       string `json:"current_limit,omitempty"`
	OldLimit           string `json:"old_limit,omitempty"`
	// MaxDailyConversationsPerBusiness is the portfolio-level limit Meta
	// sends since limits moved to the business portfolio, such as "TIER_2K".
	MaxDailyConversationsPerBusiness string                     `json:"max_daily_conversations_per_business,omitempty"`
	Extra                            map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes u with its Extra keys.
func (u QualityUpdate) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(u)) }

// CapabilityUpdate is a business_capability_update: the business
// portfolio's limits changed, such as its messaging limit
// (MaxDailyConversationsPerBusiness, "TIER_10K"); see [TierLimit].
type CapabilityUpdate struct {
	MaxDailyConversationsPerBusiness string `json:"max_daily_conversations_per_business,omitempty"`
	// MaxDailyConversationPerPhone is the per-number limit older payloads
	// carry.
	MaxDailyConversationPerPhone int64                      `json:"max_daily_conversation_per_phone,omitempty"`
	MaxPhoneNumbersPerBusiness   int64                      `json:"max_phone_numbers_per_business,omitempty"`
	Extra                        map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes u with its Extra keys.
func (u CapabilityUpdate) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(u)) }

// AccountUpdate is an account_update: a change of the WhatsApp Business
// Account's state, such as a ban, a restriction or a policy violation.
type AccountUpdate struct {
	PhoneNumber string `json:"phone_number,omitempty"`
	Event       string `json:"event"`
	// Extra holds ban_info, restriction_info, violation_info and every other
	// key, exactly as sent.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON encodes u with its Extra keys.
func (u AccountUpdate) MarshalJSON() ([]byte, error) { return encodeObject(reflect.ValueOf(u)) }

// Parse decodes a webhook body leniently. It fails, with an
// error matching ErrBadNotification that never quotes the body, only when
// the body is not a JSON object; anything inside that does not fit is
// reported in the Problems of the notification and of the item it belongs
// to, and the rest is delivered.
func Parse(body []byte) (*Notification, error) {
	if !json.Valid(body) {
		return nil, ErrBadNotification
	}
	body = body[skipSpace(body, 0):]
	if len(body) == 0 || body[0] != '{' {
		return nil, ErrBadNotification
	}
	var d decoder
	var n Notification
	d.object(body, reflect.ValueOf(&n).Elem())
	for i := range n.Entry {
		for j := range n.Entry[i].Changes {
			c := &n.Entry[i].Changes[j]
			d.stack = append(d.stack[:0], pathElem{"entry", 0}, pathElem{"", i}, pathElem{"changes", 0}, pathElem{"", j}, pathElem{"value", 0})
			c.decodeValue(&d)
		}
	}
	n.Problems = d.problems
	return &n, nil
}

// decodeValue decodes c.Raw into the typed member its Field calls for,
// recording problems in d and in c.Problems.
func (c *Change) decodeValue(d *decoder) {
	if len(c.Raw) == 0 {
		return
	}
	before := len(d.problems)
	var dst any
	switch {
	case messagesShaped[c.Field]:
		c.Value = new(Value)
		dst = c.Value
	case c.Field == FieldTemplateStatus:
		c.TemplateStatus = new(TemplateStatusUpdate)
		dst = c.TemplateStatus
	case c.Field == FieldQuality:
		c.Quality = new(QualityUpdate)
		dst = c.Quality
	case c.Field == FieldCapability:
		c.Capability = new(CapabilityUpdate)
		dst = c.Capability
	case c.Field == FieldAccountUpdate:
		c.Account = new(AccountUpdate)
		dst = c.Account
	case c.Field == FieldTemplateCategory:
		c.TemplateCategory = new(TemplateCategoryUpdate)
		dst = c.TemplateCategory
	default:
		return
	}
	if !d.object(c.Raw, reflect.ValueOf(dst).Elem()) {
		c.Value, c.TemplateStatus, c.Quality, c.Capability, c.Account, c.TemplateCategory = nil, nil, nil, nil, nil, nil
	}
	if len(d.problems) > before {
		c.Problems = append(c.Problems, d.problems[before:]...)
	}
}
