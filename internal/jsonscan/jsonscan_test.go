package jsonscan_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/wapace/wapace/internal/jsonscan"
)

// FuzzObject: Object decodes what json.Unmarshal decodes into a map of
// raw members, and fails where it fails.
func FuzzObject(f *testing.F) {
	for _, s := range []string{`{"messaging_product":"whatsapp","to":"2376","type":"template","template":{"name":"a","language":{"code":"en"},"components":[{"type":"body","parameters":[{"type":"text","text":"1"}]}]}}`,
		`{}`, ` { "a" : 1 , "b":[1,{"c":"}"}],"a":true } `, `null`, `[1]`, `"x"`, `{"a\u0062":1}`, `{"é":1}`, `{"a":"\"}"}`, `{"a":-1.5e3}`, `{"a":1`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want map[string]json.RawMessage
		wantErr := json.Unmarshal(data, &want)
		got, err := jsonscan.Object(data, false)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: Object error %v, json.Unmarshal %v", data, err, wantErr)
		}
		if err != nil {
			return
		}
		if (got == nil) != (want == nil) || len(got) != len(want) {
			t.Fatalf("%q: Object %q, json.Unmarshal %q", data, got, want)
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("%q: member %q is %q, json.Unmarshal reads %q", data, k, got[k], v)
			}
		}
		if json.Valid(data) {
			if again, err := jsonscan.Object(data, true); err != nil || len(again) != len(got) {
				t.Fatalf("%q: with valid, %q, %v", data, again, err)
			}
		}
	})
}

// FuzzScanner: where the Scanner reads a member (a key, its colon, then a
// string value) it reads what encoding/json reads, and it stops on
// everything it does not read: then the cursor never passed the end.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`"a":"b"`, ` "a" : "b" `, `"a\"":"b"`, `"é":"b"`, `"a":"b`, `"a" "b"`, `"a":1`, `"":""`, `"a":"\u0041"`, "\"a\":\"\x01\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := jsonscan.Scanner{B: data}
		sc.Space()
		key, ok := sc.Member()
		var val string
		if ok {
			val, ok = sc.String()
		}
		if sc.I > len(data) {
			t.Fatalf("%q: cursor %d past the end", data, sc.I)
		}
		if !ok {
			return
		}
		sc.Space()
		var want map[string]string
		obj := append(append([]byte("{"), data[:sc.I]...), '}')
		if err := json.Unmarshal(obj, &want); err != nil {
			t.Fatalf("%q: read %q: %q but json.Unmarshal(%q): %v", data, key, val, obj, err)
		}
		if len(want) != 1 || want[key] != val {
			t.Fatalf("%q: read %q: %q, json.Unmarshal reads %q", data, key, val, want)
		}
	})
}

func TestSkipValue(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`"a"`, 3}, {`"a\"b",`, 6}, {`12,`, 2}, {`true}`, 4}, {`{"a":[1,{"b":"]"}]} `, 19}, {`[]`, 2}, {`-1.5e3 `, 6}, {`null`, 4},
	} {
		if got := jsonscan.SkipValue([]byte(tc.in), 0); got != tc.want {
			t.Errorf("SkipValue(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
