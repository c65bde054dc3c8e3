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

// FuzzScanSuccess: where the scanner of success bodies reads a body, it
// reads what encoding/json reads.
func FuzzScanSuccess(f *testing.F) {
	for _, s := range []string{
		`{"contacts":[{"input":"+237 690","wa_id":"237690"}],"messages":[{"id":"wamid.TEST1","message_status":"accepted"}],"messaging_product":"whatsapp"}` + "\n",
		`{"messaging_product":"whatsapp","contacts":[{"input":"CO.1","user_id":"CO.1"}],"messages":[{"id":"wamid.X"}]}`,
		`{"Messages":[{"id":"a"}]}`, `{"messages":[{"ID":"a"}]}`, `{"messages":"a"}`, `{"messages":[{"id":"a"}],"contacts":"x"}`,
		`{"messages":[{"id":"a"},{"id":1}]}`, `{"messages":[{"id":"a"}],"messages":[{"id":"b"}]}`, `{"x":[1,2]}`, `{"messages":[]}`,
		`{"messages":[{"id":"a","id":"b"}]}`, `{"messages":[{"id":"\u0061"}]}`, ` { "messages" : [ { "id" : "a" } ] } `, `null`, `{}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, ok := scanSuccess(data)
		if !ok {
			return
		}
		want, wantOK := decodeSuccess(data)
		if (r != nil) != wantOK || r != nil && *r != *want {
			t.Fatalf("%q: scanSuccess %+v, encoding/json %+v (%v)", data, r, want, wantOK)
		}
	})
}

// TestScanSuccessReadsTheUsualBodies: the scanner reads the success bodies
// Meta documents and the fake writes, without encoding/json.
func TestScanSuccessReadsTheUsualBodies(t *testing.T) {
	for _, s := range []string{
		`{"messaging_product":"whatsapp","contacts":[{"input":"+16505551234","wa_id":"16505551234"}],"messages":[{"id":"wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA","message_status":"accepted"}]}`,
		`{"contacts":[{"input":"+237 690 000 001","wa_id":"237690000001"}],"messages":[{"id":"wamid.TEST1"}],"messaging_product":"whatsapp"}` + "\n",
	} {
		r, ok := scanSuccess([]byte(s))
		if !ok || r == nil || r.MessageID == "" || r.WaID == "" {
			t.Errorf("scanSuccess(%s) = %+v, %v", s, r, ok)
		}
	}
}
