package mcptool

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// FuzzSendArgs feeds arbitrary JSON arguments through what a call does
// before anything is stored: validation against the inferred schema,
// decoding, parsing. It must never panic; whatever it accepts has a
// recipient, exactly one content, a deadline that is either zero or
// derived from the arguments, and a message whose Validate does not panic.
func FuzzSendArgs(f *testing.F) {
	for _, s := range []string{
		`{"to":"+237690000001","text":"hi"}`,
		`{"to":"+237690000001","text":"hi","max_delay_ms":1000,"delivery":"sync"}`,
		`{"to":"+237690000001","template":{"name":"login","language":"en","code":"123456"},"expires_at":"2030-01-01T00:00:00Z"}`,
		`{"to":"+237690000001","template":{"name":"promo","language":"en","category":"marketing","parameters":["a","b"]}}`,
		`{"to":"abc","buttons":{"body":"pick","buttons":[{"id":"a","title":"A"}]},"reply_to":"wamid.1"}`,
		`{"to":"+237690000001","text":"hi","max_delay_ms":-5}`,
		`{"to":"+237690000001","text":"hi","expires_at":"2030-13-01T00:00:00Z"}`,
		`[]`, `null`, `{"to":1}`,
	} {
		f.Add([]byte(s))
	}
	tl := &tools{from: []string{"1001"}, replyTTL: DefaultReplyTTL}
	_, in, err := inputSchema[SendArgs](tl.sendSchema)
	if err != nil {
		f.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := decodeArgs[SendArgs](json.RawMessage(raw), in)
		var ae *argError
		if err != nil {
			if !errors.As(err, &ae) {
				t.Fatalf("decode error %T is not an argument error", err)
			}
			return
		}
		r, err := parseSend(a, tl.from, now, tl.replyTTL)
		if err != nil {
			if !errors.As(err, &ae) {
				t.Fatalf("parse error %T is not an argument error", err)
			}
			return
		}
		if a.To == "" || r.from != "1001" {
			t.Fatalf("accepted %+v", a)
		}
		if r.msg.Category != "authentication" && a.MaxDelayMS == nil && a.ExpiresAt == "" && !r.deadline.IsZero() && !r.deadline.Equal(now.Add(DefaultReplyTTL)) {
			t.Fatalf("deadline %v from nowhere", r.deadline)
		}
		if !r.deadline.Equal(r.msg.ExpiresAt) {
			t.Fatalf("message deadline %v, request %v", r.msg.ExpiresAt, r.deadline)
		}
		_ = r.msg.Validate()
	})
}
