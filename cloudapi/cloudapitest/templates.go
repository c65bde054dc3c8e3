package cloudapitest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wapace/wapace/errcodes"
)

// fakeTemplate is one template translation the server knows.
type fakeTemplate struct {
	id, name, language, category string
}

type templateKey struct{ name, language string }

// WithTemplate adds an approved template translation in category (Meta's
// names: "MARKETING", "UTILITY", "AUTHENTICATION"). The server then knows
// its templates: it lists them at GET /{version}/{waba-id}/message_templates
// (for any WhatsApp Business Account ID), refuses a template message naming
// any other (name, language) with Meta's synchronous 132001, and refuses a
// non-MARKETING template at /marketing_messages with 134100. Without any
// WithTemplate every template name is accepted, at both endpoints.
func WithTemplate(name, language, category string) Option {
	return func(s *Server) {
		if s.templates == nil {
			s.templates = map[templateKey]*fakeTemplate{}
		}
		k := templateKey{name, language}
		if t, ok := s.templates[k]; ok {
			t.category = strings.ToUpper(category)
			return
		}
		s.templates[k] = &fakeTemplate{id: strconv.Itoa(1_000_000_000 + len(s.templates) + 1),
			name: name, language: language, category: strings.ToUpper(category)}
	}
}

var templatesRE = regexp.MustCompile(`^/v[0-9]+\.[0-9]+/([0-9]+)/message_templates$`)

// handleTemplates answers GET /{version}/{waba-id}/message_templates with
// Meta's shape: data[] (id, name, language, status, category, or the
// fields asked for) and paging cursors, limit (default 25, at most 100) and
// after. It reports false for any other request. Listing requests are not
// in Requests.
func (s *Server) handleTemplates(r *http.Request) (*httptest.ResponseRecorder, bool) {
	if !templatesRE.MatchString(r.URL.Path) {
		return nil, false
	}
	w := httptest.NewRecorder()
	w.Header().Set("Content-Type", "application/json")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.templateCalls++
	if status, code, details, ok := s.authFailure(r); !ok {
		writeError(w, status, code, details, s.seq)
		return w, true
	}
	switch {
	case r.Method != http.MethodGet:
		writeError(w, http.StatusBadRequest, errcodes.InvalidParameter, "Unsupported request: the fake lists templates (GET) only", s.seq)
		return w, true
	}
	q := r.URL.Query()
	limit := 25
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, errcodes.InvalidParameter, "limit must be a positive integer", s.seq)
			return w, true
		}
		limit = min(n, 100)
	}
	start := 0
	if a := q.Get("after"); a != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(a, "cursor"))
		if err != nil || !strings.HasPrefix(a, "cursor") || n < 0 {
			writeError(w, http.StatusBadRequest, errcodes.InvalidParameter, "after is not a cursor of this list", s.seq)
			return w, true
		}
		start = n
	}
	fields := map[string]bool{"id": true}
	if f := q.Get("fields"); f != "" {
		for _, name := range strings.Split(f, ",") {
			fields[strings.TrimSpace(name)] = true
		}
	} else {
		for _, name := range []string{"name", "language", "status", "category"} {
			fields[name] = true
		}
	}
	all := s.sortedTemplates()
	end := min(start+limit, len(all))
	data := []map[string]string{}
	for _, t := range all[min(start, end):end] {
		item := map[string]string{"id": t.id}
		for name, v := range map[string]string{"name": t.name, "language": t.language, "status": "APPROVED", "category": t.category} {
			if fields[name] {
				item[name] = v
			}
		}
		data = append(data, item)
	}
	resp := map[string]any{"data": data}
	if len(data) > 0 {
		paging := map[string]any{"cursors": map[string]string{"before": "cursor" + strconv.Itoa(start), "after": "cursor" + strconv.Itoa(end)}}
		if end < len(all) {
			nq := r.URL.Query()
			nq.Set("after", "cursor"+strconv.Itoa(end))
			nq.Set("limit", strconv.Itoa(limit))
			paging["next"] = "https://graph.facebook.com" + r.URL.Path + "?" + nq.Encode()
		}
		resp["paging"] = paging
	}
	_ = json.NewEncoder(w).Encode(resp)
	return w, true
}

// sortedTemplates returns the templates by ID. Called with s.mu held.
func (s *Server) sortedTemplates() []*fakeTemplate {
	out := make([]*fakeTemplate, 0, len(s.templates))
	for _, t := range s.templates {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// TemplateListCalls returns how many message_templates requests the server
// answered.
func (s *Server) TemplateListCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.templateCalls
}

// checkTemplate applies the fake's template rules to a message request at
// endpoint: Meta's missing-template error when the server knows its
// templates, and the Marketing Messages API's own rules at
// marketing_messages. It returns the status and code to answer, or a zero
// code. Called with s.mu held.
func (s *Server) checkTemplate(endpoint string, msg map[string]json.RawMessage, typ string) (int, errcodes.Code, string) {
	marketing := endpoint == "marketing_messages"
	if marketing && typ != "template" {
		return http.StatusBadRequest, errcodes.InvalidParameter, "Message must be a template message."
	}
	if p, ok := msg["product_policy"]; ok {
		if !marketing {
			return http.StatusBadRequest, errcodes.InvalidParameter, "product_policy is a parameter of /marketing_messages"
		}
		if v := str(p); v != "CLOUD_API_FALLBACK" && v != "STRICT" {
			return http.StatusBadRequest, errcodes.InvalidParameterValue, "product_policy must be CLOUD_API_FALLBACK or STRICT"
		}
	}
	if v, ok := msg["message_activity_sharing"]; ok {
		if !marketing {
			return http.StatusBadRequest, errcodes.InvalidParameter, "message_activity_sharing is a parameter of /marketing_messages"
		}
		if s := string(v); s != "true" && s != "false" {
			return http.StatusBadRequest, errcodes.InvalidParameterValue, "message_activity_sharing must be a boolean"
		}
	}
	if typ != "template" || s.templates == nil {
		return 0, 0, ""
	}
	var tpl struct {
		Name     string `json:"name"`
		Language struct {
			Code string `json:"code"`
		} `json:"language"`
	}
	_ = json.Unmarshal(msg["template"], &tpl)
	t, ok := s.templates[templateKey{tpl.Name, tpl.Language.Code}]
	switch {
	case !ok:
		return http.StatusNotFound, errcodes.TemplateNotFound, "template name (" + tpl.Name + ") does not exist in " + tpl.Language.Code
	case marketing && t.category != "MARKETING":
		return http.StatusBadRequest, errcodes.MarketingAPITemplateCategory, "You're only able to send marketing messages on this API."
	}
	return 0, 0, ""
}

// TemplateCategory returns the category the server holds for a template
// translation, and whether it knows it.
func (s *Server) TemplateCategory(name, language string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.templates[templateKey{name, language}]
	if !ok {
		return "", false
	}
	return t.category, true
}

// Recategorize changes a known template translation's category as Meta
// does after approval, and returns the signed template_category_update
// notice of the completed change (previous_category, new_category) for
// WhatsApp Business Account wabaID, ready to post (PostWebhook). It
// reports false, changing nothing, for a template the server does not
// know.
func (s *Server) Recategorize(wabaID, name, language, category string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.templates[templateKey{name, language}]
	if !ok {
		return nil, false
	}
	prev := t.category
	t.category = strings.ToUpper(category)
	return s.categoryBody(wabaID, map[string]any{
		"message_template_id": json.Number(t.id), "message_template_name": name, "message_template_language": language,
		"previous_category": prev, "new_category": t.category,
	}), true
}

// ImpendingCategory returns the template_category_update notice Meta sends
// before it changes a template's category on its own: correct_category is
// the category to come at when, new_category the one still in force. It
// changes nothing (Meta's notice is information until the change is
// completed). It reports false for a template the server does not know.
func (s *Server) ImpendingCategory(wabaID, name, language, category string, when time.Time) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.templates[templateKey{name, language}]
	if !ok {
		return nil, false
	}
	return s.categoryBody(wabaID, map[string]any{
		"message_template_id": json.Number(t.id), "message_template_name": name, "message_template_language": language,
		"correct_category": strings.ToUpper(category), "new_category": t.category, "category_update_timestamp": when.Unix(),
	}), true
}

// categoryBody wraps a template_category_update value in a notification.
// Called with s.mu held.
func (s *Server) categoryBody(wabaID string, value map[string]any) []byte {
	body, _ := json.Marshal(map[string]any{
		"object": "whatsapp_business_account",
		"entry": []any{map[string]any{
			"id":      wabaID,
			"time":    s.clock.Now().Unix(),
			"changes": []any{map[string]any{"field": "template_category_update", "value": value}},
		}},
	})
	return body
}

// PostWebhook posts body to h as Meta would: signed with the app secret of
// WithAppSecret. It returns h's response.
func (s *Server) PostWebhook(h http.Handler, body []byte) *http.Response {
	req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
	req.Header.Set(SignatureHeader, Sign(body, s.appSecret))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// heldRule is the fake's reading of business portfolio pacing for one
// template: the first after messages go, the rest are held.
type heldRule struct {
	after, seen int
}

// WithHeldForQuality makes the server hold template name's messages after
// the first after ones, as Meta's business portfolio pacing does with a
// marketing campaign: they are accepted with message_status
// "held_for_quality_assessment" instead of "accepted". Their outcome is
// for the test to post: Delivered when Meta releases them, Failed with
// errcodes.TemplatePaused (132015) when it drops them.
func WithHeldForQuality(name string, after int) Option {
	return func(s *Server) {
		if s.held == nil {
			s.held = map[string]*heldRule{}
		}
		s.held[name] = &heldRule{after: after}
	}
}

// messageStatus is the message_status of an accepted template. Called
// with s.mu held.
func (s *Server) messageStatus(msg map[string]json.RawMessage) string {
	if len(s.held) == 0 {
		return "accepted"
	}
	var tpl struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(msg["template"], &tpl)
	if h, ok := s.held[tpl.Name]; ok {
		h.seen++
		if h.seen > h.after {
			return "held_for_quality_assessment"
		}
	}
	return "accepted"
}
