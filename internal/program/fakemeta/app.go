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
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"bufio"

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
	fake := cloudapitest.NewServer(nil, opts...)
	fake.Script(c.failures...)
	now := time.Now()
	for id, d := range c.maintenance {
		fake.Maintenance(id, now.Add(d))
	}
	a := &app{
		fake: fake, appSecret: c.appSecret, webhook: c.webhook,
		byKey: map[string]int{}, refusals: map[int]int{},
		hc: &http.Client{Timeout: 10 * time.Second},
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
	var msg struct {
		To           string `json:"to"`
		Recipient    string `json:"recipient"` // a BSUID, kept as given
		Type         string `json:"type"`
		CallbackData string `json:"biz_opaque_callback_data"`
	}
	_ = json.Unmarshal(body, &msg)
	rec.To, rec.Type, rec.CallbackData = digits(msg.To), msg.Type, msg.CallbackData
	if msg.To == "" {
		rec.To, rec.BSUID = msg.Recipient, msg.Recipient != ""
	}
	cw := &captureWriter{w: w, status: http.StatusOK}
	cw.onDrop = func() {
		// Recorded before the connection closes, so that a client that sees
		// the reset also sees it counted.
		rec.Dropped, rec.Accepted, rec.Status = true, true, 0
		a.record(r, rec)
	}
	a.fake.ServeHTTP(cw, r)
	if at := arrivalOf(r); !at.IsZero() {
		rec.At = at // the instant the fake counted the message at
	}
	rec.Status = cw.status
	if cw.hijacked {
		return
	}
	{
		var ans struct {
			Messages []struct {
				ID string `json:"id"`
			} `json:"messages"`
			Success bool `json:"success"`
			Error   *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(cw.body.Bytes(), &ans)
		switch {
		case cw.status == http.StatusOK && len(ans.Messages) > 0:
			rec.Accepted, rec.MessageID = true, ans.Messages[0].ID
		case ans.Error != nil:
			rec.Code = ans.Error.Code
		}
	}
	a.record(r, rec)
}

// record counts one answered request and queues its webhook.
func (a *app) record(r *http.Request, rec record) {
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
		case a.hooks <- a.statusBody(r.URL.Path, rec):
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
	w        http.ResponseWriter
	status   int
	body     bytes.Buffer
	hijacked bool
	onDrop   func() // called once, before a hijacked connection closes
}

func (c *captureWriter) Header() http.Header { return c.w.Header() }
func (c *captureWriter) WriteHeader(s int)   { c.status = s; c.w.WriteHeader(s) }
func (c *captureWriter) Write(b []byte) (int, error) {
	if c.body.Len() < 1<<20 {
		c.body.Write(b)
	}
	return c.w.Write(b)
}

// Hijack lets the fake drop the connection for a scripted reset or hang.
func (c *captureWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(c.w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	c.hijacked = true
	return &dropConn{Conn: conn, onClose: c.onDrop}, rw, nil
}

// dropConn runs onClose once before closing.
type dropConn struct {
	net.Conn
	once    sync.Once
	onClose func()
}

func (d *dropConn) Close() error {
	d.once.Do(d.onClose)
	return d.Conn.Close()
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
