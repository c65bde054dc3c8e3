package cloudapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/errcodes"
)

// The Cloud API endpoints a message is posted to, under
// /<version>/<PHONE_NUMBER_ID>/. Meta's "Route template messages by
// category" (September 2026): a template whose latest category is MARKETING
// goes to marketing_messages (the Marketing Messages API for WhatsApp),
// every other message to messages.
const (
	endpointMessages  = "messages"
	endpointMarketing = "marketing_messages"
)

// ErrUnknownCategory is matched by the error of a send of a template whose
// category the Client cannot tell: the Message has no Category and the
// registry given to WithTemplateCategories does not know the template. The
// send fails before anything is reserved or sent (StateNotSubmitted): the
// Client never guesses an endpoint, because a marketing template belongs on
// /marketing_messages and any other template is refused there (134100).
// Set Message.Category, or fill the registry (ListTemplates,
// TemplateRegistry.Fill) and send again.
var ErrUnknownCategory = errors.New("cloudapi: template category unknown")

// ParseCategory reads Meta's name for a template category ("MARKETING",
// "UTILITY", "AUTHENTICATION", as the Message Templates API and the
// template webhooks send them; any case) as a Category. It reports false
// for any other name.
func ParseCategory(name string) (Category, bool) {
	switch c := Category(strings.ToLower(strings.TrimSpace(name))); c {
	case CategoryMarketing, CategoryUtility, CategoryAuthentication:
		return c, true
	}
	return "", false
}

// ProductPolicy is the Marketing Messages API's product_policy: what Meta
// does with a marketing template it cannot deliver through that API (a
// business not onboarded to it, say). It is sent only with messages routed
// to /marketing_messages.
type ProductPolicy string

// Product policies. The zero value sends none: Meta's default, which is
// PolicyCloudAPIFallback.
const (
	// PolicyCloudAPIFallback lets Meta deliver the message through Cloud
	// API when the Marketing Messages API cannot take it.
	PolicyCloudAPIFallback ProductPolicy = "CLOUD_API_FALLBACK"
	// PolicyStrict makes Meta refuse the message rather than fall back.
	PolicyStrict ProductPolicy = "STRICT"
)

// TemplateKey names one translation of a template of one WhatsApp Business
// Account: Meta keys a template's category by account, name and language.
type TemplateKey struct {
	// WABAID is the WhatsApp Business Account ID.
	WABAID string
	// Name is the template's name.
	Name string
	// Language is the translation's language code, such as "en_US".
	Language string
}

// TemplateCategories tells a template's latest category, so that the
// Client routes it to the right endpoint. Implementations must be safe for
// concurrent use; TemplateRegistry is the in-memory one.
type TemplateCategories interface {
	// TemplateCategory returns k's latest category and reports whether it
	// is known. An error (a store that cannot answer) fails the send before
	// anything is spent.
	TemplateCategory(ctx context.Context, k TemplateKey) (Category, bool, error)
}

// TemplateRegistry is an in-memory TemplateCategories: the mapping Meta asks
// senders to keep from (account, template, language) to latest category.
// Fill it from the Message Templates API (Client.ListTemplates, then Fill)
// and keep it current from template_category_update webhooks
// (ApplyCategoryUpdate, wired with webhook.OnTemplateCategory). The zero
// value is an empty registry ready to use; it is safe for concurrent use by
// multiple goroutines.
type TemplateRegistry struct {
	mu sync.RWMutex // protects m
	m  map[TemplateKey]Category
}

// TemplateCategory implements TemplateCategories; it never fails.
func (r *TemplateRegistry) TemplateCategory(_ context.Context, k TemplateKey) (Category, bool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.m[k]
	return c, ok, nil
}

// Set records c as k's latest category.
func (r *TemplateRegistry) Set(k TemplateKey, c Category) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[TemplateKey]Category)
	}
	r.m[k] = c
}

// Fill records the category of every template of WhatsApp Business Account
// wabaID in ts (what ListTemplates returned) and returns how many it
// recorded. Templates whose category it cannot read are skipped.
func (r *TemplateRegistry) Fill(wabaID string, ts []TemplateInfo) int {
	n := 0
	for _, t := range ts {
		if c, ok := ParseCategory(t.Category); ok && t.Name != "" && t.Language != "" {
			r.Set(TemplateKey{WABAID: wabaID, Name: t.Name, Language: t.Language}, c)
			n++
		}
	}
	return n
}

// ApplyCategoryUpdate applies a template_category_update of WhatsApp
// Business Account wabaID (the webhook Event's WABAID) and returns the
// category it recorded. Only a completed change moves the template, to its
// new_category, as Meta prescribes; an impending notice (correct_category,
// category_update_timestamp) is information and changes nothing, and so
// does an update without a category this package reads: both report false.
//
//	webhook.OnTemplateCategory(func(_ context.Context, ev webhook.Event, u *webhook.TemplateCategoryUpdate) error {
//		registry.ApplyCategoryUpdate(ev.WABAID, u)
//		return nil
//	})
func (r *TemplateRegistry) ApplyCategoryUpdate(wabaID string, u *webhook.TemplateCategoryUpdate) (Category, bool) {
	if u == nil || !u.Completed() || u.TemplateName == "" || u.TemplateLanguage == "" {
		return "", false
	}
	c, ok := ParseCategory(u.NewCategory)
	if !ok {
		return "", false
	}
	r.Set(TemplateKey{WABAID: wabaID, Name: u.TemplateName, Language: u.TemplateLanguage}, c)
	return c, true
}

// WithTemplateCategories routes template messages by their latest
// category, read from r for WhatsApp Business Account wabaID (the account
// of every number the Client sends from): MARKETING to
// /<PHONE_NUMBER_ID>/marketing_messages, any other category to /messages.
// A Message.Category set by the caller wins over r. A template r does not
// know, without a Category, fails with ErrUnknownCategory before anything
// is spent.
//
// Without this option the Client routes by Message.Category alone, and a
// template without one goes to /messages (where Cloud API still accepts
// marketing templates).
//
// Both endpoints share the number's throughput, the pair rule and the tier:
// routing changes the URL, never the pacing, and the outcome of a send is
// classified the same way.
//
// A registry that is behind Meta (a template recategorised away from
// MARKETING, a missed webhook) costs one refused request per message:
// Meta answers 134100 at /marketing_messages, and the Client sends the
// message again to /messages (see Client.Send). Refill the registry
// (ListTemplates) when Result.Attempts and the observer show such
// re-routes.
func WithTemplateCategories(wabaID string, r TemplateCategories) Option {
	return func(c *Client) error {
		if r == nil {
			return fmt.Errorf("%w: nil template categories", ErrInvalidOption)
		}
		if !isDigits(wabaID) {
			return fmt.Errorf("%w: WhatsApp Business Account ID must be digits", ErrInvalidOption)
		}
		c.wabaID, c.categories = wabaID, r
		return nil
	}
}

func isDigits(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// templateRef returns the name and language of a template message, whether
// built by Template or read back by UnmarshalJSON.
func (m Message) templateRef() (name, lang string, ok bool) {
	if m.kind != KindTemplate {
		return "", "", false
	}
	switch p := m.payload.(type) {
	case templatePayload:
		return p.Name, p.Language.Code, true
	case json.RawMessage:
		var t templatePayload
		if json.Unmarshal(p, &t) == nil {
			return t.Name, t.Language.Code, true
		}
	}
	return "", "", false
}

// endpoint decides where m is posted from the Client's registry: see
// WithTemplateCategories.
func (c *Client) endpoint(ctx context.Context, m Message) (string, error) {
	if m.kind != KindTemplate {
		return endpointMessages, nil
	}
	cat := m.Category
	if cat == "" && c.categories != nil {
		name, lang, _ := m.templateRef()
		k := TemplateKey{WABAID: c.wabaID, Name: name, Language: lang}
		got, ok, err := c.categories.TemplateCategory(ctx, k)
		switch {
		case err != nil:
			return "", fmt.Errorf("cloudapi: template category of %q (%s): %w", name, lang, err)
		case !ok:
			return "", fmt.Errorf("%w: %q (%s) in WhatsApp Business Account %s: set Message.Category or fill the registry", ErrUnknownCategory, name, lang, c.wabaID)
		}
		cat = got
	}
	if cat == CategoryMarketing {
		return endpointMarketing, nil
	}
	return endpointMessages, nil
}

// route decides, at the instant message i is posted, where it goes and
// with which body: the category may have changed while it waited for its
// slot (a completed template_category_update), and Meta routes on the
// latest one. prepare decided once already, so that a template nobody can
// place fails before anything is reserved.
func (s *sending) route(i int) (endpoint string, body []byte, err error) {
	if s.misrouted[i] {
		endpoint = endpointMessages
	} else if endpoint, err = s.c.endpoint(s.ctx, s.msgs[i]); err != nil {
		return "", nil, err
	}
	if endpoint != s.endpoints[i] {
		b, err := s.msgs[i].encodeFor(s.to, s.keys[i], endpoint == endpointMarketing)
		if err != nil {
			return "", nil, err
		}
		s.endpoints[i], s.bodies[i] = endpoint, b
	}
	return endpoint, s.bodies[i], nil
}

// printBody is the body message i is fingerprinted by for its
// idempotency key: the same whichever endpoint the message is routed to,
// so that a repeat sent after a recategorisation is still a repeat. Only a
// message with Marketing Messages API fields has bodies that differ by
// route; it is fingerprinted with them.
func (s *sending) printBody(i int) []byte {
	m := s.msgs[i]
	if (m.ProductPolicy == "" && m.ActivitySharing == nil) || s.endpoints[i] == endpointMarketing {
		return s.bodies[i]
	}
	if b, err := m.encodeFor(s.to, s.keys[i], true); err == nil {
		return b
	}
	return s.bodies[i]
}

// TemplateInfo is one template translation as the Message Templates API
// lists it, with Meta's names for status and category.
type TemplateInfo struct {
	// ID is the template's ID.
	ID string `json:"id"`
	// Name is the template's name.
	Name string `json:"name"`
	// Language is the translation's language code, such as "en_US".
	Language string `json:"language"`
	// Status is Meta's review status, such as "APPROVED", "PENDING",
	// "REJECTED", "PAUSED" or "DISABLED".
	Status string `json:"status"`
	// Category is Meta's name for the latest category: "MARKETING",
	// "UTILITY" or "AUTHENTICATION" (see ParseCategory).
	Category string `json:"category"`
}

// maxTemplatePages bounds ListTemplates: at 100 templates a page, far more
// templates than Meta lets an account hold.
const maxTemplatePages = 1000

// ListTemplates lists every template of WhatsApp Business Account wabaID
// with its name, language, status and latest category (GET
// /<WABA_ID>/message_templates, following the paging cursors). Each page is
// one management call: it waits for the Client's call budget (WithBudget)
// and a refusal that holds the budget (4, 613, 80007, 80008) holds it, so
// that listing never crowds out what the budget protects. Meta's refusal
// is returned as an *errcodes.Error; nothing is retried.
func (c *Client) ListTemplates(ctx context.Context, wabaID string) ([]TemplateInfo, error) {
	if !isDigits(wabaID) {
		return nil, invalid("waba_id", "must be digits")
	}
	var out []TemplateInfo
	after := ""
	seen := map[string]bool{}
	for range maxTemplatePages {
		q := url.Values{"fields": {"id,name,language,status,category"}, "limit": {"100"}}
		if after != "" {
			q.Set("after", after)
		}
		var page struct {
			Data   []TemplateInfo `json:"data"`
			Paging struct {
				Cursors struct {
					After string `json:"after"`
				} `json:"cursors"`
				Next string `json:"next"`
			} `json:"paging"`
		}
		if err := c.budgetedGet(ctx, wabaID+"/message_templates?"+q.Encode(), &page); err != nil {
			return nil, err
		}
		out = append(out, page.Data...)
		after = page.Paging.Cursors.After
		if page.Paging.Next == "" || after == "" {
			return out, nil
		}
		if seen[after] {
			return nil, errors.New("cloudapi: message templates paging repeats a cursor")
		}
		seen[after] = true
	}
	return nil, fmt.Errorf("cloudapi: message templates: more than %d pages", maxTemplatePages)
}

// budgetedGet makes one management GET of path within the call budget and
// decodes the answer into out.
func (c *Client) budgetedGet(ctx context.Context, path string, out any) error {
	if err := c.budget.WaitN(ctx, 1); err != nil {
		return fmt.Errorf("cloudapi: waiting for the call budget: %w", err)
	}
	req, err := c.graphRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	err = c.doJSON(req, out)
	var ge *errcodes.Error
	switch {
	case errors.As(err, &ge):
		if cl := ge.Class(); cl.Hold == errcodes.HoldApp || cl.Hold == errcodes.HoldWABA {
			c.budget.Hold(c.clock.Now(), cl.Wait, cl.MaxWait)
		}
	case err == nil:
		c.budget.Accepted(c.clock.Now())
	}
	return err
}
