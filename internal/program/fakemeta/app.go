package fakemeta

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
)

// app is the fake behind a recorder: every messages request is counted by
// what the fake answered, without depending on the fake's internals.
type app struct {
	fake      *cloudapitest.Server
	appSecret string
	webhook   string
	hooks     chan []byte // bodies to deliver
	hooksDone chan struct{}
	hc        *http.Client

	mu       sync.Mutex // protects the fields below
	log      []record
	accepted int            // messages accepted (in log)
	byKey    map[string]int // accepted per biz_opaque_callback_data
	refusals map[int]int    // by Graph error code
	hookSent int
	hookFail int
}

// record is one request as the inspection endpoint reports it.
type record struct {
	At           time.Time `json:"at"`
	Path         string    `json:"path"`
	To           string    `json:"to,omitempty"`
	Type         string    `json:"type,omitempty"`
	CallbackData string    `json:"biz_opaque_callback_data,omitempty"`
	Status       int       `json:"status"`
	Code         int       `json:"code,omitempty"`
	Accepted     bool      `json:"accepted"`
	MessageID    string    `json:"message_id,omitempty"`
	// Dropped reports a scripted reset or hang: the fake accepted the
	// message but the client got no answer.
	Dropped bool `json:"dropped,omitempty"`
	// BSUID reports that To is a business-scoped user ID, sent in
	// "recipient".
	BSUID bool `json:"bsuid,omitempty"`
}

// FetchStats asks the fake at base URL for its Stats.
func FetchStats(ctx context.Context, base string) (Stats, error) {
	var s Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/_fake/stats", nil)
	if err != nil {
		return s, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("fakemeta: stats: HTTP %d", resp.StatusCode)
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&s)
	return s, err
}

// Stats is the answer of GET /_fake/stats.
type Stats struct {
	Requests   int            `json:"requests"`
	Accepted   int            `json:"accepted"`
	Refusals   map[string]int `json:"refusals"` // by code, as a decimal string
	ByKey      map[string]int `json:"accepted_by_key"`
	Duplicates int            `json:"duplicates"`
	Webhooks   struct {
		Sent   int `json:"sent"`
		Failed int `json:"failed"`
	} `json:"webhooks"`
}

func newApp(c config) *app {
	opts := []cloudapitest.Option{
		cloudapitest.WithThroughput(c.mps),
		cloudapitest.WithArrival(arrivalOf),
		cloudapitest.WithAppSecret(c.appSecret),
		cloudapitest.WithPairRule(c.pairInterval, c.pairBurst, c.pairWindow),
	}
	a := &app{
		appSecret: c.appSecret, webhook: c.webhook,
		byKey: map[string]int{}, refusals: map[int]int{},
		hc: &http.Client{Timeout: 10 * time.Second},
	}
	opts = append(opts, cloudapitest.WithRequestObserver(a.observe))
	for id, n := range c.numberMPS {
		opts = append(opts, cloudapitest.WithNumberThroughput(id, n))
	}
	if c.tier > 0 {
		opts = append(opts, cloudapitest.WithTier(c.tier, errcodes.Code(c.tierCode)))
	}
	if c.token != "" {
		opts = append(opts, cloudapitest.WithToken(c.token))
	}
	for _, t := range c.templates {
		opts = append(opts, cloudapitest.WithTemplate(t[0], t[1], t[2]))
	}
	a.fake = cloudapitest.NewServer(nil, opts...)
	a.fake.Script(c.failures...)
	now := time.Now()
	for id, d := range c.maintenance {
		a.fake.Maintenance(id, now.Add(d))
	}
	if c.webhook != "" {
		a.hooks = make(chan []byte, 4096)
		a.hooksDone = make(chan struct{})
		go a.deliver()
	}
	return a
}

func (a *app) close() {
	if a.hooks != nil {
		close(a.hooks)
		<-a.hooksDone
	}
	a.fake.Close()
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/_fake/stats":
		a.serveJSON(w, a.stats())
		return
	case "/_fake/requests":
		a.mu.Lock()
		log := slices.Clone(a.log)
		a.mu.Unlock()
		a.serveJSON(w, log)
		return
	case "/_fake/fail":
		a.serveFail(w, r)
		return
	case "/_fake/recategorize":
		a.serveRecategorize(w, r)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/message_templates") {
		a.fake.ServeHTTP(w, r) // a management call, not a message: not logged
		return
	}
	if messagesPath(r.URL.Path) {
		// The fake records every request to these paths once, as it
		// answers: observe logs it from there.
		a.fake.ServeHTTP(w, r)
		return
	}
	a.serveOther(w, r)
}

// messagesPath reports whether path is one the fake records each request
// to (and answers as a message, or refuses): .../messages and
// .../marketing_messages. The fake records every request to such a path
// exactly once, whatever it answers; to other paths it answers media and
// template requests without recording them.
func messagesPath(path string) bool {
	return strings.HasSuffix(path, "/messages") || strings.HasSuffix(path, "/marketing_messages")
}

// observe logs a request to the messages endpoints as the fake records it
// (under the fake's lock, before the answer leaves), and queues its
// webhook.
func (a *app) observe(req cloudapitest.Request) {
	if !messagesPath(req.Path) {
		return // logged by serveOther
	}
	rec := record{At: req.At, Path: req.Path, Status: req.Status, Code: int(req.Code)}
	switch {
	case req.Accepted && req.Status == 0:
		// A scripted reset or hang: accepted, but the client got no
		// answer (and so no message ID).
		rec.Dropped, rec.Accepted = true, true
		rec.To, rec.Type, rec.CallbackData = req.To, req.Type, req.CallbackData
	case req.Accepted && req.MessageID != "":
		rec.Accepted, rec.MessageID = true, req.MessageID
		rec.To, rec.Type, rec.CallbackData = req.To, req.Type, req.CallbackData
	default:
		// Refused, failed, or a read receipt (not a message): listed with
		// what its body named, which the fake may not have read.
		rec.To, rec.Type, rec.CallbackData, rec.BSUID = named(req.Body)
	}
	if rec.Accepted {
		// A BSUID is kept as given; a phone number as its digits.
		rec.BSUID = rec.To != "" && !allDigits(rec.To)
	}
	a.record(rec)
}

// named reads what a message body names: the recipient ("to" as digits,
// else a BSUID in "recipient", reported by bsuid), the type and the
// callback data ("" for what it does not name, or cannot be read).
func named(body []byte) (to, typ, callback string, bsuid bool) {
	var msg struct {
		To           string `json:"to"`
		Recipient    string `json:"recipient"` // a BSUID, kept as given
		Type         string `json:"type"`
		CallbackData string `json:"biz_opaque_callback_data"`
	}
	_ = json.Unmarshal(body, &msg)
	to = digits(msg.To)
	if msg.To == "" {
		to, bsuid = msg.Recipient, msg.Recipient != ""
	}
	return to, msg.Type, msg.CallbackData, bsuid
}

// serveOther serves and logs a request the fake does not record itself
// (media, unknown paths): it logs what the body named and the answer.
func (a *app) serveOther(w http.ResponseWriter, r *http.Request) {
	// Sized from Content-Length (bounded), not grown from 512 bytes.
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), 1<<20)+1))
	_, err := buf.ReadFrom(io.LimitReader(r.Body, 1<<20+1))
	body := buf.Bytes()
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := record{At: time.Now(), Path: r.URL.Path}
	rec.To, rec.Type, rec.CallbackData, rec.BSUID = named(body)
	cw := &captureWriter{w: w, status: http.StatusOK}
	a.fake.ServeHTTP(cw, r)
	rec.Status = cw.status
	var ans struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(cw.body.Bytes(), &ans) == nil && ans.Error != nil {
		rec.Code = ans.Error.Code
	}
	a.record(rec)
}

// record counts one answered request and queues its webhook.
func (a *app) record(rec record) {
	a.mu.Lock()
	a.log = append(a.log, rec)
	if rec.Accepted && rec.Type != "" {
		a.accepted++
		if rec.CallbackData != "" {
			a.byKey[rec.CallbackData]++
		}
	} else if rec.Code != 0 {
		a.refusals[rec.Code]++
	}
	a.mu.Unlock()
	if rec.Accepted && rec.MessageID != "" && a.hooks != nil {
		select {
		case a.hooks <- a.statusBody(rec.Path, rec):
		default:
			a.mu.Lock()
			a.hookFail++
			a.mu.Unlock()
		}
	}
}

func (a *app) stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := Stats{Requests: len(a.log), Accepted: a.accepted, Refusals: map[string]int{}, ByKey: map[string]int{}}
	for c, n := range a.refusals {
		s.Refusals[strconv.Itoa(c)] = n
	}
	for k, n := range a.byKey {
		s.ByKey[k] = n
		s.Duplicates += n - 1
	}
	s.Webhooks.Sent, s.Webhooks.Failed = a.hookSent, a.hookFail
	return s
}

func (a *app) serveJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// decodePost reads a control request: a POST of what (else 405) whose JSON
// body, at most 64 KiB, decodes into v and passes valid (else 400 with
// want). It reports whether the request may be acted on; otherwise it has
// answered.
func decodePost(w http.ResponseWriter, r *http.Request, what string, v any, valid func() bool, want string) bool {
	if r.Method != http.MethodPost {
		http.Error(w, "POST "+what, http.StatusMethodNotAllowed)
		return false
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(v); err != nil || !valid() {
		http.Error(w, want, http.StatusBadRequest)
		return false
	}
	return true
}

func (a *app) serveFail(w http.ResponseWriter, r *http.Request) {
	var f struct {
		Code  int    `json:"code"`
		To    string `json:"to"`
		Reset bool   `json:"reset"`
		Hang  bool   `json:"hang"`
	}
	if !decodePost(w, r, "a failure", &f, func() bool { return f.Code > 0 || f.Reset || f.Hang },
		`want {"code":N,"to":"...","reset":false,"hang":false}`) {
		return
	}
	a.fake.Script(cloudapitest.Failure{To: f.To, Code: errcodes.Code(f.Code), Reset: f.Reset, Hang: f.Hang})
	w.WriteHeader(http.StatusNoContent)
}

// serveRecategorize changes a known template's category as Meta does after
// approval and posts the signed completed template_category_update to the
// -webhook URL.
func (a *app) serveRecategorize(w http.ResponseWriter, r *http.Request) {
	var q struct {
		WABA     string `json:"waba_id"`
		Name     string `json:"name"`
		Language string `json:"language"`
		Category string `json:"category"`
	}
	if !decodePost(w, r, "a recategorisation", &q, func() bool { return allDigits(q.WABA) && q.Name != "" && q.Language != "" && q.Category != "" },
		`want {"waba_id":"...","name":"...","language":"...","category":"MARKETING"}`) {
		return
	}
	body, ok := a.fake.Recategorize(q.WABA, q.Name, q.Language, q.Category)
	if !ok {
		http.Error(w, "no such template (start with -template)", http.StatusNotFound)
		return
	}
	if a.hooks != nil {
		a.hooks <- body // a rare notice: wait for room rather than drop it
	}
	w.WriteHeader(http.StatusNoContent)
}

// statusBody is Meta's "sent" status notification for an accepted message,
// built by the fake itself so that both speak one webhook shape.
func (a *app) statusBody(path string, rec record) []byte {
	number := ""
	if parts := strings.Split(strings.Trim(path, "/"), "/"); len(parts) == 3 {
		number = parts[1]
	}
	return a.fake.StatusBody(cloudapitest.StatusUpdate{
		Request: cloudapitest.Request{PhoneNumberID: number, To: rec.To, CallbackData: rec.CallbackData, MessageID: rec.MessageID},
		Status:  "sent",
		At:      rec.At,
	})
}

// deliver posts queued webhooks in order, one at a time.
func (a *app) deliver() {
	defer close(a.hooksDone)
	for body := range a.hooks {
		req, _ := http.NewRequest(http.MethodPost, a.webhook, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		m := hmac.New(sha256.New, []byte(a.appSecret))
		m.Write(body)
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
		ok := false
		if resp, err := a.hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			ok = resp.StatusCode/100 == 2
		}
		a.mu.Lock()
		if ok {
			a.hookSent++
		} else {
			a.hookFail++
		}
		a.mu.Unlock()
	}
}

// captureWriter passes a response through and keeps a copy of it.
type captureWriter struct {
	w      http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *captureWriter) Header() http.Header { return c.w.Header() }
func (c *captureWriter) WriteHeader(s int)   { c.status = s; c.w.WriteHeader(s) }
func (c *captureWriter) Write(b []byte) (int, error) {
	if c.body.Len() < 1<<20 {
		c.body.Write(b)
	}
	return c.w.Write(b)
}

func digits(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	return strings.TrimPrefix(b.String(), "00")
}
