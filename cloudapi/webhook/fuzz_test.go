package webhook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/wapace/wapace/cloudapi/webhook"
)

// countMessages counts, with a plain decoder, the message objects of the
// messages changes of body, following only well-formed paths: what a
// lenient decoder must deliver.
func countMessages(body []byte) int {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return -1
	}
	var entries []json.RawMessage
	if json.Unmarshal(top["entry"], &entries) != nil {
		return 0
	}
	total := 0
	for _, e := range entries {
		// Maps, not structs: encoding/json matches struct keys without
		// regard to case, Meta's keys are exact.
		var entry map[string]json.RawMessage
		var changes []json.RawMessage
		if !isObject(e) || json.Unmarshal(e, &entry) != nil || json.Unmarshal(entry["changes"], &changes) != nil {
			continue
		}
		for _, c := range changes {
			var ch map[string]json.RawMessage
			var field string
			if !isObject(c) || json.Unmarshal(c, &ch) != nil || json.Unmarshal(ch["field"], &field) != nil || field != "messages" || !isObject(ch["value"]) {
				continue
			}
			var v map[string]json.RawMessage
			var msgs []json.RawMessage
			if json.Unmarshal(ch["value"], &v) != nil || json.Unmarshal(v["messages"], &msgs) != nil {
				continue
			}
			for _, m := range msgs {
				if isObject(m) {
					total++
				}
			}
		}
	}
	return total
}

func isObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// FuzzParse: any JSON object is a notification that reaches
// the application with every message that can be decoded (issue 16), the
// result re-encodes to valid JSON, and nothing panics.
func FuzzParse(f *testing.F) {
	f.Add([]byte(allMessages))
	f.Add([]byte(envelope("messages", messagesValue(fxBSUIDContact))))
	for field, value := range otherFields {
		f.Add([]byte(envelope(field, value)))
	}
	f.Add([]byte(envelope("messages", messagesValue(`"messages":[42,{"id":1,"timestamp":2,"text":{"body":[]}}],"statuses":[{"errors":[{"code":"x"}]}]`))))
	f.Add([]byte(`{"entry":{"changes":[]}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := webhook.Parse(body)
		if err != nil {
			if !errors.Is(err, webhook.ErrBadNotification) || n != nil {
				t.Fatalf("Parse = %v, %v", n, err)
			}
			if isObject(body) && json.Valid(body) {
				t.Fatalf("a JSON object was refused: %v", err)
			}
			return
		}
		got := 0
		for _, e := range n.Entry {
			for _, c := range e.Changes {
				if c.Field == "messages" && c.Value != nil {
					got += len(c.Value.Messages)
				}
				for _, p := range c.Problems {
					if p.Path == "" || p.Reason == "" {
						t.Fatalf("empty problem %+v", p)
					}
				}
			}
		}
		if want := countMessages(body); got != want {
			t.Fatalf("delivered %d messages, want %d", got, want)
		}
		out, err := json.Marshal(n)
		if err != nil || !json.Valid(out) {
			t.Fatalf("re-encoding: %v", err)
		}
	})
}
