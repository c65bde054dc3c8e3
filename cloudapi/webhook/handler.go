package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/wapace/wapace/errcodes"
)

// SignatureHeader carries the HMAC-SHA256 of a webhook's raw body, keyed
// with the app secret, as "sha256=<hex>".
const SignatureHeader = "X-Hub-Signature-256"

// MaxBody caps the webhook bodies the handler reads: 3 MiB, above
// the 3 MB Meta documents as the largest webhook payload, so that no batch
// Meta sends is refused (and lost after its retries).
const MaxBody = 3 << 20

// Webhook errors, matchable with errors.Is.
var (
	// ErrNoSignature: the request has no X-Hub-Signature-256 header.
	ErrNoSignature = errors.New("webhook: no signature")
	// ErrBadSignature: the signature does not match the body.
	ErrBadSignature = errors.New("webhook: signature mismatch")
	// ErrBadNotification: the body is not a JSON object, so not a webhook
	// notification at all.
	ErrBadNotification = errors.New("webhook: malformed notification")
	// ErrNoAppSecret: the app secret is empty. A handler is never built
	// with one, and VerifySignature never passes with one.
	ErrNoAppSecret = errors.New("webhook: empty app secret")
)

// VerifySignature checks header (the X-Hub-Signature-256 value) against the
// HMAC-SHA256 of body keyed with appSecret, in constant time. An empty
// appSecret never verifies: the error matches ErrNoAppSecret.
func VerifySignature(body []byte, header, appSecret string) error {
	if appSecret == "" {
		return ErrNoAppSecret
	}
	if header == "" {
		return ErrNoSignature
	}
	hexSum, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return ErrBadSignature
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return ErrBadSignature
	}
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write(body)
	if !hmac.Equal(got, m.Sum(nil)) {
		return ErrBadSignature
	}
	return nil
}

// Event is where a webhook item came from: the business account, the field
// and, for messages-shaped fields, the business number and the contacts the
// change carried.
type Event struct {
	// WABAID is the WhatsApp Business Account ID (entry[].id).
	WABAID string
	// Field is the webhook field, such as "messages".
	Field string
	// Metadata names the business number, for messages-shaped fields.
	Metadata Metadata
	// Contacts are the users the change is about.
	Contacts []Contact
	// Time is the entry's time (entry[].time, when Meta triggered the
	// webhook), or the zero Time when the entry carries none.
	Time time.Time
}

// entryTime reads entry[].time: Unix seconds as Meta documents it, or
// milliseconds from senders that send those (a value past the year 5138 in
// seconds).
func entryTime(t int64) time.Time {
	switch {
	case t <= 0:
		return time.Time{}
	case t >= 1e11:
		return time.UnixMilli(t)
	}
	return time.Unix(t, 0)
}

// Contact returns the contact who sent m (matched on phone number or
// BSUID), or nil.
func (e Event) Contact(m *Message) *Contact {
	for i := range e.Contacts {
		c := &e.Contacts[i]
		if (m.From != "" && c.WaID == m.From) || (m.FromUserID != "" && c.UserID == m.FromUserID) {
			return c
		}
	}
	return nil
}

// Option configures a Handler.
type Option func(*Handler) error

// WithVerifyToken sets the token that Meta's GET verification challenge
// must present. Without it every challenge is refused.
func WithVerifyToken(token string) Option {
	return func(h *Handler) error { h.verifyToken = token; return nil }
}

// WithDeduper sets the Deduper that drops redelivered items (default:
// NewDeduper(100_000, 16 MiB)).
func WithDeduper(d *Deduper) Option {
	return func(h *Handler) error {
		if d == nil {
			return errors.New("webhook: WithDeduper(nil)")
		}
		h.dedupe = d
		return nil
	}
}

// OnNotification sets a callback that receives every notification, after
// de-duplication and before the typed callbacks. It sees everything, so it
// satisfies the handler's rule that nothing is acknowledged unseen.
func OnNotification(f func(context.Context, *Notification) error) Option {
	return func(h *Handler) error { h.onNotify = f; return nil }
}

// OnMessage sets the callback for each inbound message (field messages).
func OnMessage(f func(context.Context, Event, *Message) error) Option {
	return func(h *Handler) error { h.onMessage = f; return nil }
}

// OnStatus sets the callback for each status (field messages): sent,
// delivered, read, played, failed, and call statuses.
func OnStatus(f func(context.Context, Event, *Status) error) Option {
	return func(h *Handler) error { h.onStatus = f; return nil }
}

// OnErrors sets the callback for errors not tied to one message
// (value.errors[] of field messages).
func OnErrors(f func(context.Context, Event, []errcodes.Error) error) Option {
	return func(h *Handler) error { h.onErrors = f; return nil }
}

// OnTemplateStatus sets the callback for message_template_status_update.
func OnTemplateStatus(f func(context.Context, Event, *TemplateStatusUpdate) error) Option {
	return func(h *Handler) error { h.onTemplate = f; return nil }
}

// OnQuality sets the callback for phone_number_quality_update (quality
// rating and messaging-limit changes). See [ApplyTierUpdate] to feed a
// portfolio's throughput.Tier from it.
func OnQuality(f func(context.Context, Event, *QualityUpdate) error) Option {
	return func(h *Handler) error { h.onQuality = f; return nil }
}

// OnCapability sets the callback for business_capability_update (the
// business portfolio's messaging limit and other limits changed). See
// [ApplyTierUpdate].
func OnCapability(f func(context.Context, Event, *CapabilityUpdate) error) Option {
	return func(h *Handler) error { h.onCapability = f; return nil }
}

// OnTemplateCategory sets the callback for template_category_update: a
// template's category changed, or is going to (Impending). Feed a
// cloudapi.TemplateRegistry from it (ApplyCategoryUpdate) so that the
// Client routes the template by its latest category.
func OnTemplateCategory(f func(context.Context, Event, *TemplateCategoryUpdate) error) Option {
	return func(h *Handler) error { h.onCategory = f; return nil }
}

// OnOther sets the callback for every change no typed callback took in
// full: fields without a typed callback (account_update, user_preferences,
// calls, history, unknown fields, ...), the parts of a messages change whose
// typed callback is not set, and changes with decoding Problems. The Change
// keeps its Raw value, so nothing is lost. Problems outside any change (an
// entry that is not an object, say) arrive as a Change with only Problems.
func OnOther(f func(context.Context, Event, *Change) error) Option {
	return func(h *Handler) error { h.onOther = f; return nil }
}

// Handler serves Meta's webhook endpoint: the GET verification
// challenge, and POSTed notifications checked against X-Hub-Signature-256
// (401 without it, 403 on mismatch), decoded leniently, de-duplicated (Meta
// delivers at least once and retries for up to 7 days) and handed to the
// callbacks.
//
// It answers 200 only once the callbacks accepted everything, including
// items with decoding problems (they are reported, never a reason to reject
// a signed batch that Meta would redeliver for days); 500 when a callback
// returns an error, so that Meta delivers again (a callback that panics
// leaves the panic to net/http, which drops the connection: Meta delivers
// again too); 503 when some items are still in the callbacks of a
// concurrent delivery (the others are delivered), since that delivery may
// yet fail; 400 only for a body that is not a JSON object at all. It is safe
// for concurrent use.
type Handler struct {
	appSecret   string
	verifyToken string
	dedupe      *Deduper

	onNotify     func(context.Context, *Notification) error
	onMessage    func(context.Context, Event, *Message) error
	onStatus     func(context.Context, Event, *Status) error
	onErrors     func(context.Context, Event, []errcodes.Error) error
	onTemplate   func(context.Context, Event, *TemplateStatusUpdate) error
	onQuality    func(context.Context, Event, *QualityUpdate) error
	onCapability func(context.Context, Event, *CapabilityUpdate) error
	onCategory   func(context.Context, Event, *TemplateCategoryUpdate) error
	onOther      func(context.Context, Event, *Change) error
}

// NewHandler returns a handler that checks signatures with appSecret
// and hands what Meta posts to the callbacks set by the options.
//
// It fails, with an error matching ErrNoAppSecret, for an empty appSecret,
// and when neither OnNotification nor OnOther is set: without one of them
// some field would be answered 200 with nobody having seen it.
func NewHandler(appSecret string, opts ...Option) (*Handler, error) {
	if appSecret == "" {
		return nil, ErrNoAppSecret
	}
	h := &Handler{appSecret: appSecret}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("webhook: nil Option")
		}
		if err := o(h); err != nil {
			return nil, err
		}
	}
	if h.onNotify == nil && h.onOther == nil {
		return nil, errors.New("webhook: handler needs OnNotification or OnOther, so that no field is acknowledged unseen")
	}
	if h.dedupe == nil {
		h.dedupe = NewDeduper(defaultDedupeKeys, defaultDedupeBytes)
	}
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		q := r.URL.Query()
		if q.Get("hub.mode") != "subscribe" || h.verifyToken == "" ||
			subtle.ConstantTimeCompare([]byte(q.Get("hub.verify_token")), []byte(h.verifyToken)) != 1 {
			http.Error(w, "verification failed", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, q.Get("hub.challenge"))
	case http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
		if err != nil || len(body) > MaxBody {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		switch err := VerifySignature(body, r.Header.Get(SignatureHeader), h.appSecret); {
		case errors.Is(err, ErrNoSignature):
			http.Error(w, "missing signature", http.StatusUnauthorized)
			return
		case err != nil:
			http.Error(w, "bad signature", http.StatusForbidden)
			return
		}
		n, err := Parse(body)
		if err != nil {
			http.Error(w, "malformed notification", http.StatusBadRequest)
			return
		}
		// The keys are in flight until the callbacks took every item:
		// recorded then, dropped if a callback fails or panics (net/http
		// then drops the connection and Meta delivers again), so that a
		// redelivery is never answered 200 unseen.
		keys, busy := h.dedupe.filter(n)
		taken := false
		defer func() {
			if !taken {
				h.dedupe.release(keys)
			}
		}()
		if err := h.deliver(r.Context(), n); err != nil {
			http.Error(w, "handler failed", http.StatusInternalServerError)
			return
		}
		h.dedupe.commit(keys)
		taken = true
		if busy {
			// Some items are in another delivery's callbacks, which may
			// yet fail: not acknowledged, Meta delivers them again.
			w.Header().Set("Retry-After", "1")
			http.Error(w, "delivery in progress", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// deliver hands n to the callbacks; the first error stops it.
func (h *Handler) deliver(ctx context.Context, n *Notification) error {
	if len(n.Entry) == 0 && len(n.Problems) == 0 {
		return nil // nothing new: every item was delivered before
	}
	if h.onNotify != nil {
		if err := h.onNotify(ctx, n); err != nil {
			return err
		}
	}
	inChange := map[*FieldError]bool{}
	for i := range n.Entry {
		e := &n.Entry[i]
		for j := range e.Changes {
			c := &e.Changes[j]
			for _, p := range c.Problems {
				inChange[p] = true
			}
			if err := h.deliverChange(ctx, Event{WABAID: e.ID, Field: c.Field, Time: entryTime(e.Time)}, c); err != nil {
				return err
			}
		}
	}
	// Problems outside any change (an entry that is not an object, changes
	// that are not an array) still reach OnOther, as a change without a
	// field.
	var rest []*FieldError
	for _, p := range n.Problems {
		if !inChange[p] {
			rest = append(rest, p)
		}
	}
	if len(rest) > 0 && h.onOther != nil {
		return h.onOther(ctx, Event{}, &Change{Problems: rest})
	}
	return nil
}

func (h *Handler) deliverChange(ctx context.Context, ev Event, c *Change) error {
	if c.Value != nil {
		ev.Metadata, ev.Contacts = c.Value.Metadata, c.Value.Contacts
	}
	other := len(c.Problems) > 0 // unreadable items are only in Raw
	switch {
	case c.Field == FieldMessages && c.Value != nil:
		v := c.Value
		if len(v.Messages) > 0 {
			if h.onMessage == nil {
				other = true
			}
			for k := range v.Messages {
				if h.onMessage != nil {
					if err := h.onMessage(ctx, ev, &v.Messages[k]); err != nil {
						return err
					}
				}
			}
		}
		if len(v.Statuses) > 0 {
			if h.onStatus == nil {
				other = true
			}
			for k := range v.Statuses {
				if h.onStatus != nil {
					if err := h.onStatus(ctx, ev, &v.Statuses[k]); err != nil {
						return err
					}
				}
			}
		}
		if len(v.Errors) > 0 {
			if h.onErrors == nil {
				other = true
			} else if err := h.onErrors(ctx, ev, v.Errors); err != nil {
				return err
			}
		}
		if len(v.Extra) > 0 && hasUnclaimed(v.Extra) {
			other = true
		}
	case c.TemplateStatus != nil && h.onTemplate != nil:
		if err := h.onTemplate(ctx, ev, c.TemplateStatus); err != nil {
			return err
		}
	case c.Quality != nil && h.onQuality != nil:
		if err := h.onQuality(ctx, ev, c.Quality); err != nil {
			return err
		}
	case c.Capability != nil && h.onCapability != nil:
		if err := h.onCapability(ctx, ev, c.Capability); err != nil {
			return err
		}
	case c.TemplateCategory != nil && h.onCategory != nil:
		if err := h.onCategory(ctx, ev, c.TemplateCategory); err != nil {
			return err
		}
	default:
		other = true
	}
	if other && h.onOther != nil {
		return h.onOther(ctx, ev, c)
	}
	return nil
}

// hasUnclaimed reports whether a messages value's Extra holds a key that no
// typed callback delivered (anything beyond messaging_product, metadata and
// contacts, which travel with every item, and keys of typed members kept raw
// for exactness).
func hasUnclaimed(extra map[string]json.RawMessage) bool {
	for k := range extra {
		switch k {
		case "messaging_product", "metadata", "contacts", "messages", "statuses", "errors":
		default:
			return true
		}
	}
	return false
}
