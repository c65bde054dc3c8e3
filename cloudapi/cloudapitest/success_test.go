package cloudapitest

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"testing"
)

// FuzzAppendSuccess: the success body written by hand is the one
// json.Encoder writes for the same answer, whatever the strings hold.
func FuzzAppendSuccess(f *testing.F) {
	f.Add("+237 690 000 001", "237690000001", "wamid.TEST1", "accepted", false)
	f.Add("CO.1949266959121697", "", "wamid.TEST2", "", true)
	f.Add("<a&b>\"\\\x00\u2028é\xff", "x", "", "held_for_quality_assessment", false)
	f.Fuzz(func(t *testing.T, to, key, id, status string, bsuid bool) {
		c := contact(to, key)
		if bsuid {
			c = contact("", key)
		}
		var want bytes.Buffer
		_ = json.NewEncoder(&want).Encode(success{Contacts: []successContact{c},
			Messages: []successMessage{{ID: id, MessageStatus: status}}, MessagingProduct: "whatsapp"})
		if got := appendSuccess(nil, c, id, status); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("appendSuccess:\n%s\njson.Encoder:\n%s", got, want.Bytes())
		}
	})
}

// FuzzPaths: the paths parsed by hand are read as the expressions they
// replace read them.
func FuzzPaths(f *testing.F) {
	for _, p := range []string{"/v26.0/1065/messages", "/v27.0/1/marketing_messages", "/v2.00/1/messages",
		"/v1.0/1/messages/x", "/v1/1/messages", "/x/v1.0/1/messages", "/v99999999999999999999.0/1/messages", "/v١.0/1/messages"} {
		f.Add(p)
	}
	messagesRE := regexp.MustCompile(`^/(v[0-9]+\.[0-9]+)/([0-9]+)/(messages|marketing_messages)$`)
	versionRE := regexp.MustCompile(`^/v([0-9]+)\.([0-9]+)/`)
	f.Fuzz(func(t *testing.T, path string) {
		id, endpoint, ok := messagesPath(path)
		if m := messagesRE.FindStringSubmatch(path); ok != (m != nil) || ok && (id != m[2] || endpoint != m[3]) {
			t.Fatalf("messagesPath(%q) = %q, %q, %v; the expression reads %q", path, id, endpoint, ok, m)
		}
		want := true
		if m := versionRE.FindStringSubmatch(path); m != nil {
			major, err := strconv.Atoi(m[1])
			want = err == nil && major <= latestVersion && m[2] == "0"
		}
		if got := knownVersion(path); got != want {
			t.Fatalf("knownVersion(%q) = %v, want %v", path, got, want)
		}
	})
}
