package cloudapi

import (
	"container/list"
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
	"sync"

	"github.com/wapace/wapace/errcodes"
)

// SignatureHeader carries the HMAC-SHA256 of a webhook's raw body, keyed
// with the app secret, as "sha256=<hex>".
const SignatureHeader = "X-Hub-Signature-256"

// MaxWebhookBody caps the webhook bodies the handler reads.
const MaxWebhookBody = 1 << 20

// Webhook errors, matchable with errors.Is.
var (
	// ErrNoSignature: the request has no X-Hub-Signature-256 header.
	ErrNoSignature = errors.New("cloudapi: webhook has no signature")
	// ErrBadSignature: the signature does not match the body.
	ErrBadSignature = errors.New("cloudapi: webhook signature mismatch")
	// ErrBadNotification: the body is not a webhook notification.
	ErrBadNotification = errors.New("cloudapi: malformed webhook notification")
)

// VerifySignature checks header (the X-Hub-Signature-256 value) against the
// HMAC-SHA256 of body keyed with appSecret, in constant time.
func VerifySignature(body []byte, header, appSecret string) error {
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
	if !hmac.Equal(got, Sign(body, appSecret)) {
		return ErrBadSignature
	}
	return nil
}

// Sign returns the HMAC-SHA256 of body keyed with appSecret (what Meta puts
// in X-Hub-Signature-256, after "sha256=" and hex-encoded).
func Sign(body []byte, appSecret string) []byte {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write(body)
	return m.Sum(nil)
}

// Notification is one webhook delivery.
type Notification struct {
	Object string  `json:"object"`
	Entry  []Entry `json:"entry"`
}

// Entry is one WhatsApp Business Account's changes.
type Entry struct {
	ID      string   `json:"id"`
	Changes []Change `json:"changes"`
}

// Change is one change; Field is "messages" for messages and statuses.
type Change struct {
	Field string `json:"field"`
	Value Value  `json:"value"`
}

// Value is the content of a messages change.
type Value struct {
	MessagingProduct string           `json:"messaging_product"`
	Metadata         Metadata         `json:"metadata"`
	Contacts         []Contact        `json:"contacts,omitempty"`
	Messages         []InboundMessage `json:"messages,omitempty"`
	Statuses         []Status         `json:"statuses,omitempty"`
	// Errors are errors not tied to one message (value.errors[]).
	Errors []errcodes.Error `json:"errors,omitempty"`
}

// Metadata names the business number the change is about.
type Metadata struct {
	DisplayPhoneNumber string `json:"display_phone_number"`
	PhoneNumberID      string `json:"phone_number_id"`
}

// Contact is the sender of inbound messages.
type Contact struct {
	WaID    string `json:"wa_id"`
	Profile struct {
		Name string `json:"name"`
	} `json:"profile"`
}

// InboundMessage is a message a user sent. Type-specific content is kept
// raw in Content, keyed by type.
type InboundMessage struct {
	From      string `json:"from"`
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	Text      *struct {
		Body string `json:"body"`
	} `json:"text,omitempty"`
	Context *struct {
		From string `json:"from"`
		ID   string `json:"id"`
	} `json:"context,omitempty"`
	// Errors are errors about this message (messages[].errors[]), such as
	// unsupported message types.
	Errors []errcodes.Error `json:"errors,omitempty"`
	// Content holds the whole message object, for types without a field
	// here (image, interactive, button, location, ...).
	Content json.RawMessage `json:"-"`
}

// Status reports a sent message's progress: "sent", "delivered", "read",
// or "failed" with Errors.
type Status struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	Timestamp    string `json:"timestamp"`
	RecipientID  string `json:"recipient_id"`
	CallbackData string `json:"biz_opaque_callback_data,omitempty"`
	Conversation *struct {
		ID                  string `json:"id"`
		ExpirationTimestamp string `json:"expiration_timestamp,omitempty"`
		Origin              struct {
			Type string `json:"type"`
		} `json:"origin"`
	} `json:"conversation,omitempty"`
	Pricing *struct {
		Billable     bool   `json:"billable"`
		PricingModel string `json:"pricing_model"`
		Category     string `json:"category"`
		Type         string `json:"type,omitempty"`
	} `json:"pricing,omitempty"`
	// Errors say why a message failed; classify them with Class.
	Errors []errcodes.Error `json:"errors,omitempty"`
}

// ParseNotification decodes a webhook body. Errors match
// ErrBadNotification (or errcodes.ErrNotGraphError for a malformed error
// object) and never quote the body.
func ParseNotification(body []byte) (*Notification, error) {
	var n Notification
	if err := json.Unmarshal(body, &n); err != nil {
		if errors.Is(err, errcodes.ErrNotGraphError) {
			return nil, errors.Join(ErrBadNotification, errcodes.ErrNotGraphError)
		}
		return nil, ErrBadNotification
	}
	if n.Object == "" && len(n.Entry) == 0 {
		return nil, ErrBadNotification
	}
	// Keep each inbound message's raw object for its type-specific content.
	var raw struct {
		Entry []struct {
			Changes []struct {
				Value struct {
					Messages []json.RawMessage `json:"messages"`
				} `json:"value"`
			} `json:"changes"`
		} `json:"entry"`
	}
	if json.Unmarshal(body, &raw) == nil {
		for i := range n.Entry {
			for j := range n.Entry[i].Changes {
				msgs := n.Entry[i].Changes[j].Value.Messages
				if i < len(raw.Entry) && j < len(raw.Entry[i].Changes) {
					for k := range msgs {
						if k < len(raw.Entry[i].Changes[j].Value.Messages) {
							msgs[k].Content = raw.Entry[i].Changes[j].Value.Messages[k]
						}
					}
				}
			}
		}
	}
	return &n, nil
}

// WebhookHandler serves Meta's webhook endpoint: the GET verification
// challenge, and POSTed notifications checked against X-Hub-Signature-256
// (401 without it, 403 on mismatch), de-duplicated (Meta delivers at least
// once and retries for up to 7 days), and handed to a callback.
type WebhookHandler struct {
	appSecret   string
	verifyToken string
	onNotify    func(context.Context, *Notification) error
	dedupe      *Deduper
}

// NewWebhookHandler returns a handler that verifies subscriptions with
// verifyToken, checks signatures with appSecret and calls onNotify with each
// notification, duplicates of messages and statuses already seen removed
// (by d; nil makes a Deduper of 100,000 entries). If onNotify returns an
// error the handler answers 500, so that Meta delivers again.
func NewWebhookHandler(appSecret, verifyToken string, onNotify func(context.Context, *Notification) error, d *Deduper) *WebhookHandler {
	if d == nil {
		d = NewDeduper(100_000)
	}
	return &WebhookHandler{appSecret: appSecret, verifyToken: verifyToken, onNotify: onNotify, dedupe: d}
}

// ServeHTTP implements http.Handler.
func (h *WebhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxWebhookBody+1))
		if err != nil || len(body) > MaxWebhookBody {
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
		n, err := ParseNotification(body)
		if err != nil {
			http.Error(w, "malformed notification", http.StatusBadRequest)
			return
		}
		if h.dedupe.filter(n) && h.onNotify != nil {
			if err := h.onNotify(r.Context(), n); err != nil {
				h.dedupe.forget(n)
				http.Error(w, "handler failed", http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// Deduper remembers the most recent keys it has seen, up to a capacity,
// forgetting the oldest first. It is safe for concurrent use.
type Deduper struct {
	mu    sync.Mutex // protects the fields below
	cap   int
	order *list.List               // of string, oldest first
	seen  map[string]*list.Element // key -> its element in order
}

// NewDeduper returns a Deduper of capacity keys (at least 1).
func NewDeduper(capacity int) *Deduper {
	return &Deduper{cap: max(capacity, 1), order: list.New(), seen: map[string]*list.Element{}}
}

// Seen records key and reports whether it had been recorded before.
func (d *Deduper) Seen(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.seen[key]; ok {
		return true
	}
	d.seen[key] = d.order.PushBack(key)
	if d.order.Len() > d.cap {
		oldest := d.order.Front()
		d.order.Remove(oldest)
		delete(d.seen, oldest.Value.(string))
	}
	return false
}

// Forget removes key, so that it is new again.
func (d *Deduper) Forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.seen[key]; ok {
		d.order.Remove(e)
		delete(d.seen, key)
	}
}

// Len returns the number of keys remembered.
func (d *Deduper) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.seen)
}

func messageKey(m InboundMessage) string { return "m:" + m.ID }
func statusKey(s Status) string          { return "s:" + s.ID + ":" + s.Status }

// filter removes messages and statuses seen before from n and reports
// whether anything is left to deliver.
func (d *Deduper) filter(n *Notification) bool {
	left := false
	for i := range n.Entry {
		for j := range n.Entry[i].Changes {
			v := &n.Entry[i].Changes[j].Value
			msgs := v.Messages[:0]
			for _, m := range v.Messages {
				if m.ID == "" || !d.Seen(messageKey(m)) {
					msgs = append(msgs, m)
				}
			}
			v.Messages = msgs
			sts := v.Statuses[:0]
			for _, s := range v.Statuses {
				if s.ID == "" || !d.Seen(statusKey(s)) {
					sts = append(sts, s)
				}
			}
			v.Statuses = sts
			if len(msgs) > 0 || len(sts) > 0 || len(v.Errors) > 0 || len(v.Contacts) > 0 {
				left = true
			}
		}
	}
	return left
}

// forget un-records what n delivered, after the callback failed, so that
// Meta's redelivery is not dropped as a duplicate.
func (d *Deduper) forget(n *Notification) {
	for _, e := range n.Entry {
		for _, c := range e.Changes {
			for _, m := range c.Value.Messages {
				d.Forget(messageKey(m))
			}
			for _, s := range c.Value.Statuses {
				d.Forget(statusKey(s))
			}
		}
	}
}
