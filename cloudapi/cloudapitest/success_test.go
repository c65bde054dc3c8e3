package cloudapitest

import (
	"bytes"
	"encoding/json"
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
