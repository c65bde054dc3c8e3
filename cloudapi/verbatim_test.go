package cloudapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzVerbatim: content JSON that verbatim passes as it is is what
// json.Marshal writes for it.
func FuzzVerbatim(f *testing.F) {
	for _, s := range []string{`{"body":"Our winter sale starts today."}`, `{"a": 1}`, `{"a":"<b>"}`,
		`{"a":"\u2028"}`, "{\"a\":\"\u2028\"}", `{"a":"x\"y \\ z"}`, `{"name":"winter_sale","language":{"code":"en"}}`, "{\"a\":\"€\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || !verbatim(raw) {
			return
		}
		got, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, raw) {
			t.Fatalf("verbatim(%q), but json.Marshal writes %q", raw, got)
		}
	})
}
