package errcodes

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Error is one Graph API error object as the Cloud API sends it, either in
// the "error" member of a synchronous response or as one element of a
// webhook's errors array.
//
// Error unwraps to its Code, so errors.Is(err, errcodes.PairRateLimit) holds
// for an *Error with that code however it is wrapped, and
//
//	var e *errcodes.Error
//	if errors.As(err, &e) { ... e.Class().Scope ... }
//
// gives access to every field Meta sent.
type Error struct {
	// HTTPStatus is the status of the response that carried the error, or
	// zero for webhook errors. Meta has returned 400 and 429 for the same
	// throttling code: decide on Code, not on this.
	HTTPStatus int
	// Code is Meta's error code: the field to decide on.
	Code Code
	// Subcode is the deprecated Graph API error_subcode (absent from v16.0+).
	Subcode int
	// Type is the Graph error type, such as "OAuthException".
	Type string
	// Message is Meta's message, usually "(#code) title".
	Message string
	// Title is the title sent with webhook errors.
	Title string
	// Details is error_data.details: Meta's explanation of the likely cause.
	Details string
	// MessagingProduct is error_data.messaging_product ("whatsapp").
	MessagingProduct string
	// UserTitle is error_user_title, when Meta sends one.
	UserTitle string
	// UserMessage is error_user_msg, when Meta sends one.
	UserMessage string
	// FBTraceID is the trace ID to quote to Meta's support.
	FBTraceID string
	// IsTransient is Meta's optional is_transient flag; nil when absent.
	IsTransient *bool
	// Href is the documentation link sent with webhook errors.
	Href string
}

// Class returns the classification of the error's code.
func (e *Error) Class() Class { return Lookup(e.Code) }

// Unwrap returns the error's Code, which makes the Code constants usable as
// sentinels with errors.Is.
func (e *Error) Unwrap() error { return e.Code }

// Error returns a short description that is safe to log: the code, its
// title, the HTTP status and the trace ID. Meta's free text (message,
// details) is left out of it, since it may quote a phone number; it stays
// available in the fields.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("errcodes: ")
	b.WriteString(strconv.Itoa(int(e.Code)))
	cl := Lookup(e.Code)
	switch {
	case cl.Known:
		b.WriteString(" ")
		b.WriteString(cl.Title)
	case e.Title != "":
		b.WriteString(" ")
		b.WriteString(Sanitize(e.Title))
	default:
		b.WriteString(" unknown code")
	}
	if e.HTTPStatus != 0 {
		b.WriteString(" (http ")
		b.WriteString(strconv.Itoa(e.HTTPStatus))
		b.WriteString(")")
	}
	if e.FBTraceID != "" {
		b.WriteString(" fbtrace_id=")
		b.WriteString(Sanitize(e.FBTraceID))
	}
	return b.String()
}

// errorData is error_data: an object in message API errors, a plain string
// in some management API errors.
type errorData struct {
	MessagingProduct string `json:"messaging_product,omitempty"`
	Details          string `json:"details,omitempty"`
}

// MarshalJSON encodes e as the error object Meta sends (the value of the
// "error" member of a response, or one element of a webhook errors array).
// HTTPStatus is not part of the object.
func (e *Error) MarshalJSON() ([]byte, error) {
	type out struct {
		Message     string     `json:"message,omitempty"`
		Type        string     `json:"type,omitempty"`
		Code        int        `json:"code"`
		Title       string     `json:"title,omitempty"`
		ErrorData   *errorData `json:"error_data,omitempty"`
		Subcode     int        `json:"error_subcode,omitempty"`
		UserTitle   string     `json:"error_user_title,omitempty"`
		UserMessage string     `json:"error_user_msg,omitempty"`
		FBTraceID   string     `json:"fbtrace_id,omitempty"`
		IsTransient *bool      `json:"is_transient,omitempty"`
		Href        string     `json:"href,omitempty"`
	}
	o := out{
		Message: e.Message, Type: e.Type, Code: int(e.Code), Title: e.Title,
		Subcode: e.Subcode, UserTitle: e.UserTitle, UserMessage: e.UserMessage,
		FBTraceID: e.FBTraceID, IsTransient: e.IsTransient, Href: e.Href,
	}
	if e.Details != "" || e.MessagingProduct != "" {
		o.ErrorData = &errorData{MessagingProduct: e.MessagingProduct, Details: e.Details}
	}
	return json.Marshal(o)
}

// UnmarshalJSON decodes one error object as ParseWebhook does, so that an
// Error can sit in a struct decoded with encoding/json.
func (e *Error) UnmarshalJSON(data []byte) error {
	d, err := ParseWebhook(data)
	if err != nil {
		return err
	}
	*e = *d
	return nil
}

// Sanitize makes s safe to log: it masks every phone number (7 or more
// digits, in any script, full-width included, possibly spaced or split by
// dashes, dots, slashes or parentheses: "+1 415-555-0100"), every run of 40
// or more token characters (access tokens, app secrets), and caps the
// result at 200 bytes. Invalid UTF-8 is dropped first, so that it cannot
// split a number and then vanish.
func Sanitize(s string) string {
	const maxLen = 200
	s = strings.ToValidUTF8(s, "")
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < maxLen; {
		if isTokenChar(s[i]) && (i == 0 || !isTokenChar(s[i-1])) {
			k := i
			for k < len(s) && isTokenChar(s[k]) {
				k++
			}
			if k-i >= 40 {
				b.WriteString("[redacted]")
				i = k
				continue
			}
		}
		if end, digits := numberSpan(s, i); digits > 0 {
			if digits >= 7 {
				b.WriteString("[number]")
			} else {
				b.WriteString(s[i:end])
			}
			i = end
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		b.WriteString(s[i : i+size])
		i += size
	}
	out := b.String()
	for len(out) > maxLen {
		_, size := utf8.DecodeLastRuneInString(out)
		out = out[:len(out)-size]
	}
	return out
}

// numberSpan returns the end of the number starting at s[i] and how many
// digits it holds: digits of any script, joined by single separators
// (space, dash, dot, slash, parentheses). It returns 0 digits when s[i] is
// not a digit.
func numberSpan(s string, i int) (end, digits int) {
	end = i
	for j := i; j < len(s); {
		r, size := utf8.DecodeRuneInString(s[j:])
		switch {
		case unicode.IsDigit(r):
			digits++
			j += size
			end = j
		case digits > 0 && isSeparator(r):
			// A separator belongs to the number only if a digit follows
			// (after at most one more separator, as in "415) 555").
			k := j + size
			if k < len(s) {
				if r2, size2 := utf8.DecodeRuneInString(s[k:]); isSeparator(r2) && r2 != r {
					k += size2
				}
			}
			if k >= len(s) {
				return end, digits
			}
			if r3, _ := utf8.DecodeRuneInString(s[k:]); !unicode.IsDigit(r3) {
				return end, digits
			}
			j = k
		default:
			return end, digits
		}
	}
	return end, digits
}

func isSeparator(r rune) bool {
	switch r {
	case ' ', '-', '.', '/', '(', ')', '\u00a0':
		return true
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isTokenChar(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c == '_' || c == '-'
}
