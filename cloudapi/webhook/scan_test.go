package webhook

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzSplit: on any valid JSON, splitObject and splitArray agree with
// encoding/json on the members and elements.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":1,"b":[1,{"c":"}"}],"a":"x\"y"}`, `[1, "two", {"3":[4]}, null, true]`,
		` { "k\u00e9y" : { } , "e" : [ ] } `, `{"a":-1.5e3}`, `"s"`, `12`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		var m map[string]json.RawMessage
		members, ok := splitObject(raw)
		if (json.Unmarshal(raw, &m) == nil) != ok {
			t.Fatalf("splitObject ok=%v, encoding/json disagrees", ok)
		}
		if ok {
			last := map[string][]byte{}
			for _, mb := range members {
				last[string(mb.key)] = mb.value
			}
			if len(last) != len(m) {
				t.Fatalf("%d keys, want %d", len(last), len(m))
			}
			for k, v := range m {
				if !bytes.Equal(bytes.TrimSpace(last[k]), bytes.TrimSpace(v)) {
					t.Fatalf("key %q: %q, want %q", k, last[k], v)
				}
			}
		}
		var a []json.RawMessage
		elems, ok := splitArray(raw)
		if (json.Unmarshal(raw, &a) == nil) != ok {
			t.Fatalf("splitArray ok=%v, encoding/json disagrees", ok)
		}
		if ok && len(elems) != len(a) {
			t.Fatalf("%d elements, want %d", len(elems), len(a))
		}
		for i := range elems {
			if !bytes.Equal(bytes.TrimSpace(elems[i]), bytes.TrimSpace(a[i])) {
				t.Fatalf("element %d: %q, want %q", i, elems[i], a[i])
			}
		}
	})
}
