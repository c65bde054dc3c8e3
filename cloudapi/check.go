package cloudapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/jsonscan"
)

// maxBody caps what is read of a response.
const maxBody = 1 << 20

// CheckResponse reads resp's body (at most 1 MiB; it does not close it) and
// returns it when resp is a success. Otherwise it returns an error: an
// *errcodes.Error when the body is a Graph error object, whatever the
// status (Meta has answered 200 with an error object), or an error that
// matches errcodes.ErrNotGraphError for any other failure status (a proxy's
// 502 page, say). It is the classification the Client applies to every
// answer; callers that make their own requests can reuse it.
//
// What the error means for a message (refused, failed, outcome unknown)
// depends on more than the body: Send decides it, and a 5xx may have acted.
func CheckResponse(resp *http.Response) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("cloudapi: reading the http %d response: %w", resp.StatusCode, err)
	}
	if len(data) > maxBody {
		return nil, fmt.Errorf("cloudapi: http %d response larger than %d bytes", resp.StatusCode, maxBody)
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if ok && !bytes.Contains(data, []byte(`"error"`)) {
		return data, nil
	}
	ge, perr := errcodes.Parse(resp.StatusCode, data)
	switch {
	case perr == nil:
		return nil, ge
	case ok:
		return data, nil // a success that merely mentions "error"
	default:
		return nil, fmt.Errorf("cloudapi: http %d: %w", resp.StatusCode, perr)
	}
}

// attemptResult is one request's classified answer.
type attemptResult struct {
	state  SendState // StateAccepted, StateRefused (retry), StateFailed, StateNotSubmitted, StateSubmittedUnknown
	result *Result
	err    error           // the cause, never wrapped in ErrSubmittedUnknown
	gerr   *errcodes.Error // Meta's error, when it sent one
	paced  bool            // the write-time check ended the request (err says why)
}

// post makes one request for body to from's endpoint (endpointMessages or
// endpointMarketing) and classifies the answer. With a gate g, the body
// runs the write-time check (see pace.go) and the send's lateness is
// reported to the number's limiter.
func (c *Client) post(ctx context.Context, from, endpoint string, kind Kind, body []byte, g *gate) attemptResult {
	if err := ctx.Err(); err != nil { // net/http would return before tracing anything
		return attemptResult{state: StateNotSubmitted, err: err}
	}
	// traced: the transport reports to httptrace (net/http's always asks
	// for a connection first); wrote: a byte of the request may have left.
	var traced, wrote atomic.Bool
	trace := &httptrace.ClientTrace{
		GetConn:      func(string) { traced.Store(true) },
		WroteHeaders: func() { wrote.Store(true) },
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			traced.Store(true)
			wrote.Store(true)
			if info.Err == nil && g != nil {
				g.wrote(g.now())
			}
		},
	}
	req, err := c.newRequest(httptrace.WithClientTrace(ctx, trace), from, endpoint, body, g)
	if err != nil {
		return attemptResult{state: StateNotSubmitted, err: err}
	}
	resp, err := c.hc.Do(req)
	if g != nil {
		aborted, released := g.finish()
		switch {
		case aborted != nil && !released:
			// The check refused before any byte of the body left: Meta
			// cannot have acted on the message.
			return attemptResult{state: StateNotSubmitted, err: aborted, paced: true}
		case err != nil && !released:
			// The request ended (its timeout, a transport error) while
			// the check held the body: none of it left, and none will
			// (finish), so Meta cannot have acted on the message, even if
			// the headers were written.
			return attemptResult{state: StateNotSubmitted, err: c.scrub(err)}
		}
	}
	if err != nil {
		resent := errors.Is(err, errResend)
		err = c.scrub(err)
		if resent {
			// A body left: the transport's second try was refused.
			return attemptResult{state: StateSubmittedUnknown, err: err}
		}
		if refusedBeforeWrite(err) || (traced.Load() && !wrote.Load()) {
			return attemptResult{state: StateNotSubmitted, err: err}
		}
		return attemptResult{state: StateSubmittedUnknown, err: err}
	}
	defer resp.Body.Close()
	c.observeUsage(resp.Header)
	data, err := CheckResponse(resp)
	if err != nil {
		var ge *errcodes.Error
		if errors.As(err, &ge) {
			c.scrubError(ge)
			return attemptResult{state: decide(ge), err: ge, gerr: ge}
		}
		return attemptResult{state: StateSubmittedUnknown, err: c.scrub(err)}
	}
	r, ok := parseSuccess(kind, data)
	if !ok {
		return attemptResult{state: StateSubmittedUnknown, err: errors.New("cloudapi: http " + strconv.Itoa(resp.StatusCode) + " without a message ID")}
	}
	return attemptResult{state: StateAccepted, result: r}
}

// newRequest builds the POST of body to from's endpoint, with the token in
// the Authorization header only. With a gate g the body runs the
// write-time check.
func (c *Client) newRequest(ctx context.Context, from, endpoint string, body []byte, g *gate) (*http.Request, error) {
	var r io.Reader
	if g == nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/"+c.version+"/"+from+"/"+endpoint, r)
	if err != nil {
		return nil, fmt.Errorf("cloudapi: building the request: %w", err)
	}
	if g != nil {
		pacedRequest(req, g, body)
	}
	req.Header = http.Header{"Authorization": {c.token.header}, "Content-Type": {"application/json"}}
	return req, nil
}

// refusedBeforeWrite reports whether a transport error proves that no byte
// of the request left: the name did not resolve, the connection or its TLS
// handshake never completed. It covers transports that do not report to
// httptrace.
func refusedBeforeWrite(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var rec tls.RecordHeaderError
	var cv *tls.CertificateVerificationError
	return errors.As(err, &rec) || errors.As(err, &cv)
}

// parseSuccess reads a 2xx body.
func parseSuccess(kind Kind, data []byte) (*Result, bool) {
	if kind == KindRead {
		var r struct {
			Success bool `json:"success"`
		}
		return &Result{}, json.Unmarshal(data, &r) == nil && r.Success
	}
	if r, ok := scanSuccess(data); ok {
		return r, r != nil
	}
	return decodeSuccess(data)
}

// decodeSuccess reads a message's 2xx body with encoding/json.
func decodeSuccess(data []byte) (*Result, bool) {
	var r struct {
		Contacts []struct {
			Input  string `json:"input"`
			WaID   string `json:"wa_id"`
			UserID string `json:"user_id"`
		} `json:"contacts"`
		Messages []struct {
			ID            string `json:"id"`
			MessageStatus string `json:"message_status"`
		} `json:"messages"`
	}
	if json.Unmarshal(data, &r) != nil || len(r.Messages) == 0 || r.Messages[0].ID == "" {
		return nil, false
	}
	res := &Result{MessageID: r.Messages[0].ID, MessageStatus: r.Messages[0].MessageStatus}
	if len(r.Contacts) > 0 {
		res.Input, res.WaID, res.UserID = r.Contacts[0].Input, r.Contacts[0].WaID, r.Contacts[0].UserID
	}
	return res, true
}

// scanSuccess reads the usual shape of a message's 2xx body without
// reflection: an object whose members are strings, or arrays of objects
// whose members are strings, in printable ASCII without escapes. ok
// reports whether data has that shape and names each member at most once
// (keys compared exactly: json matches them in any case); then the result
// is decodeSuccess's (nil when decodeSuccess finds no message ID).
// Otherwise decodeSuccess reads it.
func scanSuccess(data []byte) (r *Result, ok bool) {
	var res Result
	sc := successScanner{jsonscan.Scanner{B: data}}
	sc.Space()
	if !sc.Byte('{') {
		return nil, false
	}
	var seen [2]bool // contacts, messages
	for first := true; ; first = false {
		sc.Space()
		if sc.Byte('}') {
			break
		}
		if !first && (!sc.Byte(',') || !sc.SpaceThen()) {
			return nil, false
		}
		key, ok := sc.Member()
		if !ok || folds(key, successKeys[:]...) {
			return nil, false
		}
		k := slices.Index(successKeys[:], key)
		switch {
		case k >= 0:
			if seen[k] || sc.Peek() != '[' {
				return nil, false
			}
			seen[k] = true
			var fields [3]string
			names := successFields[k]
			n, ok := sc.objects(names, fields[:len(names)])
			switch {
			case !ok:
				return nil, false
			case n > 0 && k == 0:
				res.Input, res.WaID, res.UserID = fields[0], fields[1], fields[2]
			case n > 0 && k == 1:
				res.MessageID, res.MessageStatus = fields[0], fields[1]
			}
		case sc.Peek() == '"':
			if _, ok := sc.String(); !ok {
				return nil, false
			}
		case sc.Peek() == '[':
			if _, ok := sc.objects(nil, nil); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	sc.Space()
	if sc.I != len(data) {
		return nil, false
	}
	if res.MessageID == "" {
		return nil, true
	}
	return &res, true
}

// successKeys are the members of a success scanSuccess reads, and
// successFields the members of their objects.
var (
	successKeys   = [2]string{"contacts", "messages"}
	successFields = [2][]string{{"input", "wa_id", "user_id"}, {"id", "message_status"}}
)

// folds reports whether key matches one of names in another case (as
// encoding/json would match it) without being it.
func folds(key string, names ...string) bool {
	for _, n := range names {
		if key != n && strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}

// successScanner reads the JSON scanSuccess accepts.
type successScanner struct{ jsonscan.Scanner }

// objects reads an array of objects of strings, keeping the members
// named in names of its first object in fields, and returns its length.
func (s *successScanner) objects(names, fields []string) (int, bool) {
	s.Byte('[')
	n := 0
	for ; ; n++ {
		s.Space()
		if s.Byte(']') {
			return n, true
		}
		if n > 0 && (!s.Byte(',') || !s.SpaceThen()) {
			return 0, false
		}
		if !s.Byte('{') {
			return 0, false
		}
		var seen [3]bool // names
		for first := true; ; first = false {
			s.Space()
			if s.Byte('}') {
				break
			}
			if !first && (!s.Byte(',') || !s.SpaceThen()) {
				return 0, false
			}
			key, ok := s.Member()
			if !ok || folds(key, names...) {
				return 0, false
			}
			v, ok := s.String()
			if !ok {
				return 0, false
			}
			if j := slices.Index(names, key); j >= 0 {
				if seen[j] {
					return 0, false
				}
				seen[j] = true
				if n == 0 {
					fields[j] = v
				}
			}
		}
	}
}
