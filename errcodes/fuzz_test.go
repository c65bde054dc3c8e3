package errcodes_test

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/errcodes"
)

// FuzzParse checks that Parse never panics, that every failure is a
// *ParseError, and that what it accepts survives an encode and a re-parse.
func FuzzParse(f *testing.F) {
	for _, s := range []string{body130429, body131056, body190, body100, "", "{}", `{"error":{}}`,
		`{"error":{"code":"12"}}`, `{"error":{"code":1e3}}`, `<html>`} {
		f.Add(400, []byte(s))
	}
	for _, b := range metaBodies2026 {
		f.Add(b.status, []byte(b.body))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e, err := errcodes.Parse(status, body)
		if err != nil {
			var pe *errcodes.ParseError
			if e != nil || !errors.As(err, &pe) || !errors.Is(err, errcodes.ErrNotGraphError) {
				t.Fatalf("Parse = %v, %v: want nil and a *ParseError", e, err)
			}
			return
		}
		if e.HTTPStatus != status || e.Code < 0 {
			t.Fatalf("Parse = %+v for status %d", e, status)
		}
		roundTrip(t, e, func(obj []byte) (*errcodes.Error, error) {
			return errcodes.Parse(status, append(append([]byte(`{"error":`), obj...), '}'))
		})
	})
}

// FuzzParseWebhook is FuzzParse for webhook error objects.
func FuzzParseWebhook(f *testing.F) {
	for _, s := range []string{hook131049, `{"code":131047,"title":"Re-engagement message"}`, `{"code":0}`, `null`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		e, err := errcodes.ParseWebhook(raw)
		if err != nil {
			if e != nil || !errors.Is(err, errcodes.ErrNotGraphError) {
				t.Fatalf("ParseWebhook = %v, %v", e, err)
			}
			return
		}
		if e.HTTPStatus != 0 {
			t.Fatalf("webhook error has HTTP status %d", e.HTTPStatus)
		}
		roundTrip(t, e, errcodes.ParseWebhook)
	})
}

func roundTrip(t *testing.T, e *errcodes.Error, parse func([]byte) (*errcodes.Error, error)) {
	t.Helper()
	if !utf8.ValidString(e.Error()) {
		t.Fatalf("Error() is not valid UTF-8: %q", e.Error())
	}
	obj, err := json.Marshal(e)
	if err != nil {
		t.Fatalf("Marshal(%+v): %v", e, err)
	}
	again, err := parse(obj)
	if err != nil {
		t.Fatalf("re-parse of %s: %v", obj, err)
	}
	// Invalid UTF-8 in strings is replaced by encoding/json; compare what
	// survives encoding.
	if !validStrings(e) {
		return
	}
	if diff := cmp.Diff(e, again); diff != "" {
		t.Fatalf("round trip changed the error (-first +again):\n%s", diff)
	}
}

func validStrings(e *errcodes.Error) bool {
	for _, s := range []string{e.Type, e.Message, e.Title, e.Details, e.MessagingProduct, e.UserTitle, e.UserMessage, e.FBTraceID, e.Href} {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}
