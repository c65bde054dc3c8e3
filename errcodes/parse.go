package errcodes

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
)

// ErrNotGraphError is matched (with errors.Is) by every error Parse and
// ParseWebhook return: the input was not a Graph API error object.
var ErrNotGraphError = errors.New("errcodes: not a Graph API error")

// ParseError reports that a body could not be read as a Graph API error.
// It never quotes the body, which may hold personal data.
type ParseError struct {
	// Status is the HTTP status of the response, or zero for webhook input.
	Status int
	// Reason says what was wrong, such as "invalid JSON" or "no error code".
	Reason string
}

// Error returns a message naming the HTTP status and the reason.
func (e *ParseError) Error() string {
	if e.Status == 0 {
		return "errcodes: webhook error object is not a Graph API error: " + e.Reason
	}
	return "errcodes: http " + strconv.Itoa(e.Status) + " body is not a Graph API error: " + e.Reason
}

// Is reports whether target is ErrNotGraphError.
func (e *ParseError) Is(target error) bool { return target == ErrNotGraphError }

// Parse reads the error object of a synchronous Cloud API response:
// {"error": {"message": ..., "type": ..., "code": ..., "error_data":
// {"messaging_product": "whatsapp", "details": ...}, "error_subcode": ...,
// "fbtrace_id": ...}}. status is the response's HTTP status, recorded in the
// result. Parse is pure; the caller caps the body it reads (1 MiB is ample).
//
// A body that is not such an object (HTML from a proxy, an empty body, a
// success body, an error without a code) yields a *ParseError naming the
// status, never a zero Code that could pass for success. Meta advises to
// decide on code and details, not on HTTP status or subcode.
func Parse(status int, body []byte) (*Error, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, &ParseError{Status: status, Reason: "empty body"}
	}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, &ParseError{Status: status, Reason: "invalid JSON"}
	}
	if len(env.Error) == 0 || bytes.Equal(env.Error, []byte("null")) {
		return nil, &ParseError{Status: status, Reason: "no error object"}
	}
	e, reason := decodeObject(env.Error)
	if reason != "" {
		return nil, &ParseError{Status: status, Reason: reason}
	}
	e.HTTPStatus = status
	return e, nil
}

// ParseWebhook reads one element of the errors arrays found in webhook
// notifications (statuses[].errors[], value.errors[], messages[].errors[]):
// {"code": 131049, "title": ..., "message": ..., "error_data": {"details":
// ...}, "href": ...}. The result has HTTPStatus zero. Failures are
// *ParseError values, as for Parse.
func ParseWebhook(raw []byte) (*Error, error) {
	e, reason := decodeObject(bytes.TrimSpace(raw))
	if reason != "" {
		return nil, &ParseError{Reason: reason}
	}
	return e, nil
}

// decodeObject decodes one error object, or says why it cannot.
func decodeObject(raw []byte) (*Error, string) {
	if len(raw) == 0 {
		return nil, "empty input"
	}
	if raw[0] != '{' {
		return nil, "error is not an object"
	}
	var w struct {
		Code        json.RawMessage `json:"code"`
		Subcode     json.RawMessage `json:"error_subcode"`
		Type        json.RawMessage `json:"type"`
		Message     json.RawMessage `json:"message"`
		Title       json.RawMessage `json:"title"`
		ErrorData   json.RawMessage `json:"error_data"`
		UserTitle   json.RawMessage `json:"error_user_title"`
		UserMessage json.RawMessage `json:"error_user_msg"`
		FBTraceID   json.RawMessage `json:"fbtrace_id"`
		IsTransient json.RawMessage `json:"is_transient"`
		Href        json.RawMessage `json:"href"`
		Details     json.RawMessage `json:"details"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, "invalid JSON"
	}
	if len(w.Code) == 0 || bytes.Equal(w.Code, []byte("null")) {
		return nil, "no error code"
	}
	code, ok := parseCode(w.Code)
	if !ok {
		return nil, "error code is not a non-negative integer"
	}
	e := &Error{
		Code:        code,
		Type:        str(w.Type),
		Message:     str(w.Message),
		Title:       str(w.Title),
		UserTitle:   str(w.UserTitle),
		UserMessage: str(w.UserMessage),
		FBTraceID:   str(w.FBTraceID),
		Href:        str(w.Href),
	}
	if c, ok := parseCode(w.Subcode); ok {
		e.Subcode = int(c)
	}
	var b bool
	if len(w.IsTransient) > 0 && json.Unmarshal(w.IsTransient, &b) == nil && !bytes.Equal(w.IsTransient, []byte("null")) {
		e.IsTransient = &b
	}
	switch {
	case len(w.ErrorData) > 0 && w.ErrorData[0] == '{':
		var d errorData
		if json.Unmarshal(w.ErrorData, &d) == nil {
			e.Details, e.MessagingProduct = d.Details, d.MessagingProduct
		}
	case len(w.ErrorData) > 0 && w.ErrorData[0] == '"':
		e.Details = str(w.ErrorData)
	}
	if e.Details == "" {
		// Message-level webhook errors carry details at the top level.
		e.Details = str(w.Details)
	}
	return e, ""
}

// maxCode bounds accepted codes; Meta's largest documented codes have seven
// digits.
const maxCode = 1<<31 - 1

// parseCode reads a JSON number, or a string holding one, as a code. An
// integral number written with a fraction or exponent (131049.0) is read as
// the integer it is.
func parseCode(raw json.RawMessage) (Code, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	s := string(raw)
	if raw[0] == '"' {
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || f < 0 || f > maxCode {
			return 0, false
		}
		n = int64(f)
	}
	if n < 0 || n > maxCode {
		return 0, false
	}
	return Code(n), true
}

// str reads a JSON string leniently: anything else reads as "".
func str(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
