// Package cloudapitest is a fake WhatsApp Cloud API for tests: it serves
// /{version}/{phone-number-id}/messages and /marketing_messages (the
// Marketing Messages API, which shares the number's throughput and the pair
// rule) with Meta's JSON for success and errors, lists the templates it is
// given (WithTemplate) at /{version}/{waba-id}/message_templates, and
// enforces its own reading of Meta's limits, so that a sender can be tested
// offline, on simulated time.
//
// The fake implements the rules itself (it does not import pairlimit or
// throughput), so the library and the fake check each other:
//
//   - the pair rule: 1 message every 6 s per (number, recipient), bursts of
//     up to 45 within 6 s accepted against future quota; a send while the
//     pair owes and outside the burst is refused with 131056;
//   - throughput: more than the number's messages per second within any
//     closed one-second window is refused with 130429;
//   - the messaging tier (when set): templates to more unique recipients in
//     24 h than the limit are refused (Meta documents no code for this; the
//     fake answers 131064 unless told otherwise).
//
// Refused requests change nothing, as at Meta. Failures can be scripted
// (FailNext, Script, Maintenance): a Graph error or a bare status, a reset
// after the request was read, a hang, a stall before anything was sent, for
// one recipient and for the Nth matching request. Every message request is
// counted (Count, Accepted) and the latest are recorded with their
// instants (Requests), so that memory stays bounded in a run of millions;
// signed status webhooks can be posted to a handler. Recipients are phone numbers ("to") or
// business-scoped user IDs ("recipient"); each message type's content is
// checked with the fake's own reading of Meta's reference. The media
// endpoints (upload, URL, download from MediaHost) are served too.
//
// # Time
//
// The fake reads a clock.Clock shared with the code under test (the real
// clock by default, which testing/synctest fakes). Client returns an
// *http.Client whose in-memory transport needs no socket, so tests run
// inside a synctest bubble; URL starts a real httptest.Server for code that
// must dial.
package cloudapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/jsonscan"
)

// BaseURL is the base URL to give a client that uses Server.Client: the
// in-memory transport ignores the host.
const BaseURL = "http://cloudapitest.invalid"

// Option configures a Server.
type Option func(*Server)

// WithClock makes the server read time from c; share it with the code
// under test.
func WithClock(c clock.Clock) Option { return func(s *Server) { s.clock = c } }

// WithArrival makes the server count a message at the instant arrival
// reports for its request, when that is not the zero Time, instead of its
// clock's Now once the body has been read: for example the kernel's
// receive time of the request's last bytes, which does not depend on when
// the server's goroutine is scheduled (wapace-fakemeta does this on
// Linux). Meta stamps a message when it reaches Meta, whatever our
// machine's load. Instants may then come in any order; the throughput rule
// is applied to them as instants, not as the order they were handled in.
func WithArrival(arrival func(*http.Request) time.Time) Option {
	return func(s *Server) { s.arrival = arrival }
}

// WithToken makes the server answer 401 (code 190) unless requests carry
// "Authorization: Bearer token". Without it any bearer token is accepted.
func WithToken(token string) Option { return func(s *Server) { s.token = token } }

// WithAppSecret sets the app secret status webhooks are signed with.
func WithAppSecret(secret string) Option { return func(s *Server) { s.appSecret = secret } }

// WithThroughput sets every number's messages per second (default 80).
func WithThroughput(mps int) Option { return func(s *Server) { s.mps = mps } }

// WithNumberThroughput sets one number's messages per second.
func WithNumberThroughput(phoneNumberID string, mps int) Option {
	return func(s *Server) { s.mpsFor[phoneNumberID] = mps }
}

// WithTier refuses templates to more than limit unique recipients per
// rolling 24 h (all numbers together), with code (0 means 131064). The fake
// counts by scanning its recipients: keep tiers in tests small. Without a
// tier the fake keeps no per-recipient record of templates.
func WithTier(limit int, code errcodes.Code) Option {
	return func(s *Server) {
		s.tierLimit = limit
		if code == 0 {
			code = errcodes.BusinessRateLimit
		}
		s.tierCode = code
	}
}

// DefaultBodies is how many of the latest requests keep their Body in
// Requests unless WithBodies says otherwise: a long run (a million
// messages) would otherwise keep every body in memory.
const DefaultBodies = 10_000

// WithBodies keeps the Body of the latest n requests (n < 0: of every
// request; 0: of none). Default DefaultBodies.
func WithBodies(n int) Option { return func(s *Server) { s.bodies = n } }

// DefaultHistory is about how many of the latest requests Requests keeps
// unless WithHistory says otherwise (at least half of it, at most all of
// it): about 30 MB, so that a long run (a million messages) does not keep
// every request in memory.
const DefaultHistory = 100_000

// WithHistory keeps only about the latest n requests in Requests (at least
// n/2, at most n; n <= 0: every request). Default DefaultHistory. Count
// and Accepted still count every request.
func WithHistory(n int) Option {
	return func(s *Server) {
		s.history = n
		if n == 1 {
			s.history = 2
		}
	}
}

// WithRequestObserver calls f with every request as it is recorded, under
// the server's lock (f must not call the server). With WithHistory, a
// long run can keep its own summary instead of every request.
func WithRequestObserver(f func(Request)) Option { return func(s *Server) { s.observe = f } }

// WithPairRule replaces Meta's pair rule (6 s, 45, 6 s).
func WithPairRule(interval time.Duration, burst int, window time.Duration) Option {
	return func(s *Server) { s.interval, s.burst, s.window = interval, burst, window }
}

// Request is one request the server received, with what it answered.
type Request struct {
	// At is the instant the server had the whole request (its body).
	At time.Time
	// Path is the request's URL path, such as
	// "/v26.0/106540352242922/marketing_messages".
	Path string
	// PhoneNumberID is the business number in the path.
	PhoneNumberID string
	// To is the recipient: a phone number's digits, or the business-scoped
	// user ID sent in "recipient" ("" for a read receipt).
	To string
	// Type is the message type ("read" for a read receipt).
	Type string
	// CallbackData is biz_opaque_callback_data.
	CallbackData string
	// Status is the HTTP status answered (0 when the connection was reset).
	Status int
	// Accepted reports whether the server accepted the message.
	Accepted bool
	// Code is the error code answered when not accepted.
	Code errcodes.Code
	// MessageID is the wamid answered when accepted.
	MessageID string
	// Body is the raw request body.
	Body []byte
}

// Failure is a scripted answer. Every field has a safe zero value: the
// zero Failure answers the next request with a bare 500 (no Graph body).
type Failure struct {
	// To limits the failure to one recipient (any spelling of a phone
	// number, or a BSUID); "" matches any.
	To string
	// Nth applies the failure to the Nth request it matches, counting from
	// when it was scripted (0 and 1 both mean the next one); the requests
	// before it pass. Use it to fail one bubble of a burst.
	Nth int
	// Code answers a Graph error with this code.
	Code errcodes.Code
	// Status is the HTTP status: with Code, Meta's for it if zero (401 for
	// 190, 400 otherwise); without Code, a
	// bare status with a non-Graph body (a proxy's 502, say), 500 if zero.
	// A status outside 100 to 599 counts as zero.
	Status int
	// Reset accepts the message, then drops the connection before
	// answering: the client cannot know the outcome.
	Reset bool
	// Hang accepts the message, then answers nothing until the request's
	// context ends (a timeout). Over URL the connection stays open until
	// the client closes it or the server is closed.
	Hang bool
	// Stall reads nothing: the request never leaves the client (a dial or
	// TLS handshake that never completes) until its context ends. The
	// message is not recorded. Only the in-memory transport (Client) can
	// stall; over URL it behaves as Hang.
	Stall bool
}

// Server is a fake Cloud API. It is safe for concurrent use.
type Server struct {
	clock     clock.Clock
	arrival   func(*http.Request) time.Time // WithArrival
	token     string
	appSecret string
	mps       int
	mpsFor    map[string]int
	tierLimit int
	tierCode  errcodes.Code
	interval  time.Duration
	burst     int
	window    time.Duration

	mu       sync.Mutex // protects the fields below
	pairs    pairTable
	recent   map[string][]int64   // per number: accepted instants of the last seconds (Unix ns), sorted
	tier     map[string]time.Time // recipient -> latest template (only with WithTier)
	tierKept int                  // len(tier) after its last sweep
	script   []scripted
	maint    map[string]time.Time // number -> end of maintenance
	requests []Request
	accepted int                   // requests accepted since the start
	refused  map[errcodes.Code]int // requests answered with each code since the start
	history  int                   // WithHistory (<= 0: every request)
	bodies   int                   // WithBodies (< 0: every body)
	observe  func(Request)         // WithRequestObserver
	seq      int
	srv      *httptest.Server
	closed   bool                  // Close ran and URL has not started a server since
	hung     map[net.Conn]struct{} // connections a hang holds open
	media    map[string]mediaAsset // uploads by media ID
	mediaSeq int
	// templates, with WithTemplate, are the templates the server knows;
	// nil accepts every template name.
	templates     map[templateKey]*fakeTemplate
	templateCalls int                  // message_templates requests answered
	held          map[string]*heldRule // by template name: business portfolio pacing
}

type scripted struct {
	Failure
	seen int // matching requests that passed so far
}

// pairState is the pair rule's record of one (number, recipient) pair:
// the instant its debt runs out (due), and the burst it is in.
type pairState struct {
	due, burstStart time.Time
	burstLen        int
}

// pairTable holds the pair states that can still change an answer.
//
// A pair is judged at an instant t only by whether t is before its due
// (a pair at or after its due opens a new burst, exactly as a pair never
// seen). So a state whose due is forgetAfter or more before the latest
// instant judged is dropped: every arrival stamped after latest -
// forgetAfter finds it past its due, and a new pair is answered the same.
// Only an arrival stamped more than forgetAfter before one already judged
// (possible with WithArrival alone) could have found the pair still
// owing; the throughput rule keeps the same horizon. The table is swept
// whenever it has doubled since the last sweep (and holds at least
// pairSweepMin states), so a sweep costs O(1) per send, amortised, and
// the table holds at most about twice the pairs that owe: at 1,000 msg/s
// to distinct recipients, about 8,000 states (one is about 120 bytes)
// whatever the length of the run.
type pairTable struct {
	m      map[string]*pairState
	latest time.Time // the latest instant judged
	kept   int       // len(m) after the last sweep
}

// forgetAfter is how long past its due a pair's state, or past its 24 h
// a tier entry, is kept (see pairTable).
const forgetAfter = 2 * time.Second

// pairSweepMin is the size below which the pair and tier tables are not
// swept.
const pairSweepMin = 1024

// sweep drops the states that can no longer change an answer, once the
// table has doubled since the last sweep.
func (pt *pairTable) sweep() {
	if len(pt.m) < max(2*pt.kept, pairSweepMin) {
		return
	}
	cut := pt.latest.Add(-forgetAfter)
	for k, p := range pt.m {
		if !p.due.After(cut) {
			delete(pt.m, k)
		}
	}
	pt.kept = len(pt.m)
}

// TB is the part of testing.TB the server uses; *testing.T, *testing.B and
// *testing.F satisfy it.
type TB interface {
	Cleanup(func())
}

// NewServer returns a fake Cloud API. A real listener is started only if
// URL is called; tb.Cleanup closes it. With a nil tb (in an Example, say)
// call Close instead.
func NewServer(tb TB, opts ...Option) *Server {
	s := &Server{
		clock: clock.New(), mps: 80, mpsFor: map[string]int{},
		interval: 6 * time.Second, burst: 45, window: 6 * time.Second,
		pairs: pairTable{m: map[string]*pairState{}}, recent: map[string][]int64{},
		bodies: DefaultBodies, history: DefaultHistory,
		tier: map[string]time.Time{}, maint: map[string]time.Time{},
	}
	for _, o := range opts {
		o(s)
	}
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// Close stops the real listener, if URL started one, and closes the
// connections scripted hangs hold open.
func (s *Server) Close() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.closed = true
	hung := s.hung
	s.hung = nil
	s.mu.Unlock()
	for c := range hung {
		_ = c.Close()
	}
	if srv != nil {
		srv.Close()
	}
}

// Client returns an *http.Client whose transport calls the server in
// memory: no socket, so it works inside testing/synctest. Use it with
// BaseURL.
func (s *Server) Client() *http.Client { return &http.Client{Transport: transport{s}} }

// URL starts (once) a real HTTP server and returns its base URL.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		s.closed = false
		s.srv = httptest.NewServer(s)
	}
	return s.srv.URL
}

// FailNext scripts the next request (to any recipient) to fail with code.
func (s *Server) FailNext(code errcodes.Code) { s.Script(Failure{Code: code}) }

// FailNextFor scripts the next request to recipient to (in any spelling)
// to fail with code.
func (s *Server) FailNextFor(to string, code errcodes.Code) {
	s.Script(Failure{To: to, Code: code})
}

// Script queues failures; each is used by the Nth request it matches.
func (s *Server) Script(f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range f {
		if x.To != "" {
			x.To = recipientKey(x.To)
		}
		if x.Status < 100 || x.Status > 599 {
			x.Status = 0
		}
		s.script = append(s.script, scripted{Failure: x})
	}
}

// Maintenance makes number phoneNumberID answer 131057 until until.
func (s *Server) Maintenance(phoneNumberID string, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maint[phoneNumberID] = until
}

// Requests returns the latest requests received, in order: about the
// latest DefaultHistory, or as WithHistory says (every one with
// WithHistory(0)). Only the latest WithBodies of them
// (DefaultBodies unless set) keep their Body; older ones have a nil Body.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count returns how many requests were answered with code (every request
// since the start, whatever WithHistory keeps).
func (s *Server) Count(code errcodes.Code) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused[code]
}

// Accepted returns how many messages the server accepted (every request
// since the start, whatever WithHistory keeps).
func (s *Server) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// record (s.mu held) counts and keeps a request, bounding the history.
func (s *Server) record(req Request) {
	if req.Accepted {
		s.accepted++
	} else if req.Status != 0 {
		if s.refused == nil {
			s.refused = map[errcodes.Code]int{}
		}
		s.refused[req.Code]++
	}
	if s.observe != nil {
		s.observe(req)
	}
	if s.history > 0 && len(s.requests) >= s.history {
		// Drop the oldest half: amortised O(1) per request.
		n := copy(s.requests, s.requests[len(s.requests)-s.history/2:])
		clear(s.requests[n:])
		s.requests = s.requests[:n]
	}
	s.requests = append(s.requests, req)
	if s.bodies >= 0 {
		if i := len(s.requests) - 1 - s.bodies; i >= 0 {
			s.requests[i].Body = nil
		}
	}
}

// ServeHTTP answers one request as the Cloud API would.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec, fail := s.handle(r)
	if fail != nil && (fail.Reset || fail.Hang || fail.Stall) {
		// Over a real socket: a reset drops the connection without an
		// answer; a hang holds it open, answering nothing, until the
		// client closes it or the server is closed.
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				if !fail.Reset {
					s.hang(conn)
				}
				conn.Close()
				return
			}
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// hang reads and discards what conn receives until the client closes it
// or Close closes it.
func (s *Server) hang(conn net.Conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if s.hung == nil {
		s.hung = map[net.Conn]struct{}{}
	}
	s.hung[conn] = struct{}{}
	s.mu.Unlock()
	_, _ = io.Copy(io.Discard, conn)
	s.mu.Lock()
	delete(s.hung, conn)
	s.mu.Unlock()
}

// handle decides the answer to r, records it, and returns the recorded
// response and the scripted failure that applied, if any.
func (s *Server) handle(r *http.Request) (*httptest.ResponseRecorder, *Failure) {
	if !messagesSuffix(r.URL.Path) { // neither can take a messages path
		if w, ok := s.handleMedia(r); ok {
			return w, nil
		}
		if w, ok := s.handleTemplates(r); ok {
			return w, nil
		}
	}
	w := httptest.NewRecorder()
	w.Header().Set("Content-Type", "application/json")
	var body []byte
	var err error
	if hb, ok := r.Body.(heldBody); ok {
		body = hb.b // read whole by the in-memory transport
	} else {
		body, err = readBody(r)
	}
	// What can be judged from the request alone is, before the lock: the
	// requests' decoding and content checks run side by side.
	in := s.judge(r, body, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	// A request arrives when its body has: Meta cannot act on a message
	// before (a client may flush the headers first and the body much
	// later). The instant is read under the lock, so that requests are
	// counted in the order of their instants: a window never counts an
	// arrival later than the one it judges.
	now := s.clock.Now()
	if s.arrival != nil {
		if at := s.arrival(r); !at.IsZero() {
			now = at
		}
	}
	req := in.req
	req.At = now
	answer := func(status int, code errcodes.Code, details string) {
		req.Status, req.Code = status, code
		writeError(w, status, code, details, s.seq)
		s.record(req)
	}
	if in.code != 0 {
		answer(in.status, in.code, in.details)
		return w, nil
	}
	if in.read {
		req.Status, req.Accepted = http.StatusOK, true
		s.record(req)
		_, _ = w.WriteString(`{"success":true}`)
		return w, nil
	}
	if status, code, details := s.checkTemplate(in.endpoint, in.msg, req.Type); code != 0 {
		answer(status, code, details)
		return w, nil
	}

	if f := s.takeScript(req.To); f != nil {
		switch {
		case f.Reset || f.Hang || f.Stall:
			s.accept(&req, now)
			req.Status = 0
			s.record(req)
			return w, f
		case f.Code == 0:
			req.Status = f.Status
			if req.Status == 0 {
				req.Status = http.StatusInternalServerError
			}
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(req.Status)
			_, _ = w.WriteString("<html><body>upstream error</body></html>")
			s.record(req)
			return w, f
		default:
			status := f.Status
			if status == 0 {
				status = statusFor(f.Code)
			}
			answer(status, f.Code, "Scripted failure")
			return w, f
		}
	}
	if until, ok := s.maint[req.PhoneNumberID]; ok && now.Before(until) {
		answer(http.StatusBadRequest, errcodes.Maintenance, "Business account is in maintenance mode")
		return w, nil
	}
	if !s.throughputOK(req.PhoneNumberID, now) {
		answer(http.StatusBadRequest, errcodes.ThroughputLimit, "Message failed to send because there were too many messages sent from this phone number in a short period of time")
		return w, nil
	}
	if !s.pairOK(req.PhoneNumberID, req.To, now, false) {
		answer(http.StatusBadRequest, errcodes.PairRateLimit, "Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time")
		return w, nil
	}
	if req.Type == "template" && !s.tierOK(req.To, now) {
		answer(http.StatusBadRequest, s.tierCode, "Messaging limit reached for this business portfolio")
		return w, nil
	}
	s.accept(&req, now)
	s.record(req)
	status := ""
	if req.Type == "template" {
		status = s.messageStatus(in.msg)
	}
	_, _ = w.Write(appendSuccess(nil, contact(in.to, req.To), req.MessageID, status))
	return w, nil
}

// readBody reads r's body, at most 1 MiB and one byte (more is refused),
// into a buffer sized from its Content-Length.
func readBody(r *http.Request) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), 1<<20)+1))
	_, err := buf.ReadFrom(io.LimitReader(r.Body, 1<<20+1))
	return buf.Bytes(), err
}

// incoming is a message request as far as it can be judged without the
// server's state: its refusal, if one applies, or what it asks for.
type incoming struct {
	req Request // Path, Body, and what was read before any refusal
	// status, code and details are the refusal (code 0: none).
	status   int
	code     errcodes.Code
	details  string
	read     bool   // a read receipt
	endpoint string // "messages" or "marketing_messages"
	to       string // "to" as given
	msg      map[string]json.RawMessage
}

// judge reads r (whose body is body, or failed with err) as a message
// request, in the order Meta's checks run: the path and its version, the
// method, the token, the body, then the message's fields and content.
func (s *Server) judge(r *http.Request, body []byte, err error) incoming {
	in := incoming{req: Request{Path: r.URL.Path, Body: body}}
	refuse := func(status int, code errcodes.Code, details string) incoming {
		in.status, in.code, in.details = status, code, details
		return in
	}
	id, endpoint, isMessages := messagesPath(r.URL.Path)
	if !knownVersion(r.URL.Path) {
		return refuse(http.StatusBadRequest, codeUnknownPath, "Unknown path components: "+r.URL.Path)
	}
	if r.Method != http.MethodPost || !isMessages {
		return refuse(http.StatusBadRequest, errcodes.InvalidParameter, "Unsupported "+strings.ToLower(r.Method)+" request. Use POST /{version}/{phone-number-id}/messages or /marketing_messages")
	}
	in.req.PhoneNumberID, in.endpoint = id, endpoint
	if status, code, details, ok := s.authFailure(r); !ok {
		return refuse(status, code, details)
	}
	if err != nil || len(body) > 1<<20 {
		return refuse(http.StatusBadRequest, errcodes.InvalidParameter, "Request body unreadable or too large")
	}
	msg, err := jsonscan.Object(body, false)
	if err != nil {
		return refuse(http.StatusBadRequest, errcodes.InvalidParameter, "Request body is not a JSON object")
	}
	in.msg = msg
	if str(msg["messaging_product"]) != "whatsapp" {
		return refuse(http.StatusBadRequest, errcodes.MissingParameter, "messaging_product must be whatsapp")
	}
	if str(msg["status"]) == "read" && endpoint == "messages" {
		in.req.Type = "read"
		if str(msg["message_id"]) == "" {
			return refuse(http.StatusBadRequest, errcodes.MissingParameter, "message_id is required")
		}
		in.read = true
		return in
	}
	in.req.Type, in.req.CallbackData = str(msg["type"]), str(msg["biz_opaque_callback_data"])
	to, rcpt := str(msg["to"]), str(msg["recipient"])
	in.to = to
	switch {
	case rcpt != "" && to == "":
		// A business-scoped user ID goes in "recipient" (Meta,
		// "Business-scoped user IDs"); when "to" is set too, it wins.
		if !matchBSUID(rcpt) {
			return refuse(http.StatusBadRequest, errcodes.InvalidParameterValue, "recipient is not a business-scoped user ID")
		}
		in.req.To = rcpt
	case matchBSUID(to):
		return refuse(http.StatusBadRequest, errcodes.InvalidParameterValue, "A business-scoped user ID goes in recipient, not to")
	default:
		in.req.To = digits(to)
		if len(in.req.To) < 7 || len(in.req.To) > 15 {
			return refuse(http.StatusBadRequest, errcodes.InvalidParameterValue, "to must be a phone number")
		}
	}
	if in.req.Type == "" || len(msg[in.req.Type]) == 0 {
		return refuse(http.StatusBadRequest, errcodes.InvalidParameterValue, "type and the type's object are required")
	}
	if details := checkContent(in.req.Type, msg[in.req.Type]); details != "" {
		return refuse(http.StatusBadRequest, errcodes.InvalidParameterValue, details)
	}
	return in
}

// messagesSuffix reports whether path ends as a messages path does.
func messagesSuffix(path string) bool {
	return strings.HasSuffix(path, "/messages") || strings.HasSuffix(path, "/marketing_messages")
}

// messagesPath parses /{version}/{phone-number-id}/messages or
// /marketing_messages, the version as v{digits}.{digits}, and returns the
// number and the endpoint.
func messagesPath(path string) (id, endpoint string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/v")
	if !ok {
		return "", "", false
	}
	major, rest, ok := strings.Cut(rest, ".")
	if !ok || !allDigits(major) {
		return "", "", false
	}
	minor, rest, ok := strings.Cut(rest, "/")
	if !ok || !allDigits(minor) {
		return "", "", false
	}
	id, endpoint, ok = strings.Cut(rest, "/")
	if !ok || !allDigits(id) || (endpoint != "messages" && endpoint != "marketing_messages") {
		return "", "", false
	}
	return id, endpoint, true
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// accept records an accepted message against every rule. Called with s.mu
// held.
func (s *Server) accept(req *Request, now time.Time) {
	s.pairOK(req.PhoneNumberID, req.To, now, true)
	recent := s.recent[req.PhoneNumberID]
	t := now.UnixNano()
	s.recent[req.PhoneNumberID] = slices.Insert(recent, firstAtOrAfter(recent, t), t)
	if req.Type == "template" && s.tierLimit > 0 {
		s.tier[req.To] = now
		s.sweepTier(now)
	}
	s.seq++
	req.Accepted, req.Status = true, http.StatusOK
	req.MessageID = "wamid.TEST" + strconv.Itoa(s.seq)
}

// sweepTier drops the tier entries older than 24 h (and forgetAfter),
// which tierOK no longer counts, once the table has doubled since its last
// sweep. Called with s.mu held.
func (s *Server) sweepTier(now time.Time) {
	if len(s.tier) < max(2*s.tierKept, pairSweepMin) {
		return
	}
	cut := now.Add(-24*time.Hour - forgetAfter)
	for r, at := range s.tier {
		if !at.After(cut) {
			delete(s.tier, r)
		}
	}
	s.tierKept = len(s.tier)
}

// pairOK applies the pair rule at now; with commit it also records the
// send. Called with s.mu held.
func (s *Server) pairOK(from, to string, now time.Time, commit bool) bool {
	if now.After(s.pairs.latest) {
		s.pairs.latest = now
	}
	key := from + ">" + to
	p, ok := s.pairs.m[key]
	switch {
	case !ok || !now.Before(p.due):
		if commit {
			if !ok {
				s.pairs.sweep()
				p = &pairState{}
				s.pairs.m[key] = p
			}
			*p = pairState{due: now.Add(s.interval), burstStart: now, burstLen: 1}
		}
		return true
	case now.Before(p.burstStart.Add(s.window)) && p.burstLen < s.burst:
		if commit {
			p.burstLen++
			p.due = p.due.Add(s.interval)
		}
		return true
	default:
		return false
	}
}

// throughputOK reports whether one more message from number, arriving at
// now, keeps every closed one-second window within the number's figure.
// With arrivals in order that is the window [now-1s, now]; with instants
// out of order (WithArrival) it is every window that holds now. Called
// with s.mu held.
func (s *Server) throughputOK(number string, now time.Time) bool {
	limit, ok := s.mpsFor[number]
	if !ok {
		limit = s.mps
	}
	recent := s.recent[number]
	t := now.UnixNano()
	// Keep two seconds before the latest instant seen: an arrival stamped
	// earlier than ones already counted is judged with them.
	latest := t
	if n := len(recent); n > 0 && recent[n-1] > latest {
		latest = recent[n-1]
	}
	recent = recent[firstAtOrAfter(recent, latest-2*second):]
	s.recent[number] = recent
	if len(recent) < limit {
		return true
	}
	from := firstAtOrAfter(recent, t-second)
	if latest <= t {
		// In order: every window holding now lies within [now-1s, now].
		return len(recent)-from < limit
	}
	// Out of order: every closed window [a, a+1s] holding now starts at
	// now or at a counted instant within the second before it. The starts
	// are taken in increasing order, so the end of each window only moves
	// forward: one pass over the instants of [now-1s, now+1s].
	end := from // the first instant after the current window
	full := func(i int, a int64) bool {
		for end < len(recent) && recent[end] <= a+second {
			end++
		}
		return end-i >= limit
	}
	i := from
	for ; i < len(recent) && recent[i] <= t; i++ {
		if full(i, recent[i]) {
			return false
		}
	}
	return !full(i, t)
}

// second is a second in nanoseconds, the unit of the throughput rule's
// instants.
const second = int64(time.Second)

// firstAtOrAfter returns the index of the first instant in sorted that is
// at or after t (len(sorted) if none is).
func firstAtOrAfter(sorted []int64, t int64) int {
	i, _ := slices.BinarySearch(sorted, t)
	return i
}

// tierOK reports whether a template to recipient fits in the tier.
func (s *Server) tierOK(to string, now time.Time) bool {
	if s.tierLimit <= 0 {
		return true
	}
	n := 0
	for r, at := range s.tier {
		if now.Sub(at) < 24*time.Hour {
			if r == to {
				return true
			}
			n++
		}
	}
	return n < s.tierLimit
}

// takeScript removes and returns the first scripted failure whose turn
// it is for a request to to. Called with s.mu held.
func (s *Server) takeScript(to string) *Failure {
	for i := range s.script {
		sc := &s.script[i]
		if sc.To != "" && sc.To != to {
			continue
		}
		if sc.seen+1 < sc.Nth {
			sc.seen++
			continue
		}
		f := sc.Failure
		s.script = append(s.script[:i], s.script[i+1:]...)
		return &f
	}
	return nil
}

func writeError(w *httptest.ResponseRecorder, status int, code errcodes.Code, details string, _ int) {
	writeGraphError(w, status, code, details)
}

// str returns the JSON string raw holds ("" if it holds another value).
// raw comes from a body already checked to be valid JSON: a string
// without escapes in valid UTF-8 is its own bytes.
func str(raw json.RawMessage) string {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw[1:n-1], '\\') < 0 && utf8.Valid(raw[1:n-1]) {
		return string(raw[1 : n-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// success is the body of an accepted message (fields in the order a map
// would print them).
type success struct {
	Contacts         []successContact `json:"contacts"`
	Messages         []successMessage `json:"messages"`
	MessagingProduct string           `json:"messaging_product"`
}

type successContact struct {
	Input  string `json:"input"`
	UserID string `json:"user_id,omitempty"`
	WaID   string `json:"wa_id,omitempty"`
}

type successMessage struct {
	ID            string `json:"id"`
	MessageStatus string `json:"message_status,omitempty"`
}

// appendSuccess appends the body of an accepted message to b, as
// json.Encoder would write a success (and its newline): the recipient's
// contact, the wamid id, and the message status when status is not "".
func appendSuccess(b []byte, c successContact, id, status string) []byte {
	b = append(b, `{"contacts":[{"input":`...)
	b = appendString(b, c.Input)
	if c.UserID != "" {
		b = append(b, `,"user_id":`...)
		b = appendString(b, c.UserID)
	}
	if c.WaID != "" {
		b = append(b, `,"wa_id":`...)
		b = appendString(b, c.WaID)
	}
	b = append(b, `}],"messages":[{"id":`...)
	b = appendString(b, id)
	if status != "" {
		b = append(b, `,"message_status":`...)
		b = appendString(b, status)
	}
	return append(b, "}],\"messaging_product\":\"whatsapp\"}\n"...)
}

// appendString appends s as a JSON string, as encoding/json writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // escapes, or a character beyond ASCII
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// contact is the contacts[] entry of a success: wa_id for a phone number
// (the "to" given), user_id for a business-scoped user ID.
func contact(to, key string) successContact {
	if to == "" {
		return successContact{Input: key, UserID: key}
	}
	return successContact{Input: to, WaID: key}
}

// matchBSUID reports whether s is a business-scoped user ID (bsuidRE),
// without running the expression on a phone number.
func matchBSUID(s string) bool {
	return len(s) > 3 && s[2] == '.' && bsuidRE.MatchString(s)
}

// bsuidRE is the fake's reading of a business-scoped user ID: an ISO 3166
// alpha-2 country code, a dot, an optional "ENT." (a parent ID) and up to
// 128 letters and digits.
var bsuidRE = regexp.MustCompile(`^[A-Z]{2}\.(ENT\.)?[A-Za-z0-9]{1,128}$`)

// recipientKey is how the fake keys a recipient: a BSUID as is, a phone
// number by its digits.
func recipientKey(s string) string {
	if matchBSUID(s) {
		return s
	}
	return digits(s)
}

// digits keeps the digits of a phone number, dropping an international 00.
func digits(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	return strings.TrimPrefix(b.String(), "00")
}

// stall reports whether a scripted Stall takes r, which is then neither
// read nor recorded. Only scripts without To can stall: the recipient is in
// the body, which a stalled request never delivers.
func (s *Server) stall(r *http.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.script {
		sc := &s.script[i]
		if sc.Stall && sc.To == "" && sc.seen+1 >= sc.Nth {
			s.script = append(s.script[:i], s.script[i+1:]...)
			return true
		}
		if sc.To == "" {
			return false // an earlier script takes this request
		}
	}
	return false
}

// heldBody is a request body the in-memory transport has read whole: the
// server takes its bytes as they are.
type heldBody struct {
	*bytes.Reader
	b []byte
}

func (heldBody) Close() error { return nil }

// transport calls the server in memory.
type transport struct{ s *Server }

// ErrReset is the error the in-memory transport returns for a scripted
// Reset: the request was read and the connection dropped.
var ErrReset = errors.New("cloudapitest: connection reset by peer")

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	trace := httptrace.ContextClientTrace(r.Context())
	if trace != nil && trace.GetConn != nil {
		trace.GetConn(r.URL.Host)
	}
	if t.s.stall(r) {
		<-r.Context().Done()
		return nil, fmt.Errorf("cloudapitest: no connection: %w", context.Cause(r.Context()))
	}
	var body []byte
	if r.Body != nil {
		// Sized from the declared length, so that the body is read into
		// one buffer (ReadFrom grows a buffer with less than
		// bytes.MinRead free).
		buf := bytes.NewBuffer(make([]byte, 0, max(r.ContentLength, 0)+bytes.MinRead))
		_, err := buf.ReadFrom(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		body = buf.Bytes()
	}
	if trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}
	// A shallow copy: the server reads the request's header and URL and
	// changes neither.
	r2 := r.WithContext(r.Context())
	r2.Body = heldBody{bytes.NewReader(body), body}
	rec, fail := t.s.handle(r2)
	if fail != nil && fail.Reset {
		return nil, ErrReset
	}
	if fail != nil && fail.Hang {
		<-r.Context().Done()
		return nil, fmt.Errorf("cloudapitest: no answer: %w", context.Cause(r.Context()))
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}
