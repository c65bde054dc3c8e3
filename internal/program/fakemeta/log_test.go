package fakemeta

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/wapace/wapace/cloudapi/webhook"
)

// TestRequestLogOfEveryKind: /_fake/requests and /_fake/stats list every
// kind of request the way they always have: accepted messages and
// templates (to a phone number or a BSUID) with their wamid, a read
// receipt (not a message), refusals by rule and by script with their code
// and what the body named, bodies the fake cannot read, a dropped
// connection (accepted, no answer), a path the fake does not know and a
// media request.
func TestRequestLogOfEveryKind(t *testing.T) {
	hook, hooks := statusHook(t, func(s *webhook.Status) string { return s.CallbackData + ">" + s.RecipientID + s.RecipientUserID })
	url := start(t, "-pair-burst", "1", "-app-secret", "SECRET", "-webhook", hook,
		"-fail", "131049@237690000009", "-fail", "reset@237690000008", "-fail", "503@237690000007")
	const msgs = "/v23.0/106540352242922/messages"
	for _, r := range []struct{ path, body string }{
		{msgs, `{"messaging_product":"whatsapp","to":"+237 690 000 001","type":"text","text":{"body":"hi"},"biz_opaque_callback_data":"k1"}`},
		{"/v23.0/106540352242922/marketing_messages", `{"messaging_product":"whatsapp","to":"237690000002","type":"template","template":{"name":"promo","language":{"code":"en"}},"biz_opaque_callback_data":"k2"}`},
		{msgs, `{"messaging_product":"whatsapp","recipient":"CO.1949266959121697","type":"text","text":{"body":"hi"}}`},
		{msgs, `{"messaging_product":"whatsapp","status":"read","message_id":"wamid.X"}`},
		{msgs, `{"messaging_product":"whatsapp","to":"237690000001","type":"text","text":{"body":"again"},"biz_opaque_callback_data":"k3"}`}, // 131056
		{msgs, `{"messaging_product":"whatsapp","to":"237690000009","type":"text","text":{"body":"hi"},"biz_opaque_callback_data":"k4"}`},    // scripted 131049
		{msgs, `{"messaging_product":"whatsapp","to":"237690000007","type":"text","text":{"body":"hi"},"biz_opaque_callback_data":"k5"}`},    // scripted 503
		{msgs, `{"messaging_product":"whatsapp","to":"237690000008","type":"text","text":{"body":"hi"},"biz_opaque_callback_data":"k6"}`},    // scripted reset
		{msgs, `{"messaging_product":"sms","to":"237690000010","type":"text","text":{"body":"hi"},"biz_opaque_callback_data":"k7"}`},
		{msgs, `{"messaging_product":"whatsapp","to":"237690000011","type":"text","text":{}}`},
		{msgs, `not json`},
		{"/v23.0/106540352242922/nowhere", `{"to":"237690000012","type":"text"}`},
		{"/v23.0/106540352242922/media", `{}`},
	} {
		req, _ := http.NewRequest(http.MethodPost, url+r.path, strings.NewReader(r.body))
		req.Header.Set("Authorization", "Bearer T")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	resp, err := http.Get(url + "/_fake/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []record
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if r.At.IsZero() {
			t.Errorf("request %d has no instant", i)
		}
		if r.MessageID != "" && !strings.HasPrefix(r.MessageID, "wamid.") {
			t.Errorf("request %d: message ID %q", i, r.MessageID)
		}
	}
	want := []record{
		{Path: msgs, To: "237690000001", Type: "text", CallbackData: "k1", Status: 200, Accepted: true, MessageID: "id"},
		{Path: "/v23.0/106540352242922/marketing_messages", To: "237690000002", Type: "template", CallbackData: "k2", Status: 200, Accepted: true, MessageID: "id"},
		{Path: msgs, To: "CO.1949266959121697", Type: "text", Status: 200, Accepted: true, MessageID: "id", BSUID: true},
		{Path: msgs, Status: 200},
		{Path: msgs, To: "237690000001", Type: "text", CallbackData: "k3", Status: 400, Code: 131056},
		{Path: msgs, To: "237690000009", Type: "text", CallbackData: "k4", Status: 400, Code: 131049},
		{Path: msgs, To: "237690000007", Type: "text", CallbackData: "k5", Status: 400, Code: 503},
		{Path: msgs, To: "237690000008", Type: "text", CallbackData: "k6", Accepted: true, Dropped: true},
		{Path: msgs, To: "237690000010", Type: "text", CallbackData: "k7", Status: 400, Code: 131008},
		{Path: msgs, To: "237690000011", Type: "text", Status: 400, Code: 131009},
		{Path: msgs, Status: 400, Code: 100},
		{Path: "/v23.0/106540352242922/nowhere", To: "237690000012", Type: "text", Status: 400, Code: 100},
		{Path: "/v23.0/106540352242922/media", Status: 400, Code: 100},
	}
	ids := cmp.Transformer("id", func(s string) string {
		if strings.HasPrefix(s, "wamid.") {
			return "id"
		}
		return s
	})
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(record{}, "At"), ids); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	waitWebhooks(t, url, 3)
	s := stats(t, url)
	wantStats := Stats{Requests: 13, Accepted: 4,
		Refusals: map[string]int{"131056": 1, "131049": 1, "503": 1, "131008": 1, "131009": 1, "100": 3},
		ByKey:    map[string]int{"k1": 1, "k2": 1, "k6": 1}}
	wantStats.Webhooks.Sent = 3
	if diff := cmp.Diff(wantStats, s); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	// A status webhook for each message accepted with an answer: not for
	// the read receipt, nor for the dropped connection's message.
	if diff := cmp.Diff([]string{"k1>237690000001", "k2>237690000002", ">CO.1949266959121697"}, hooks()); diff != "" {
		t.Errorf("webhooks (-want +got):\n%s", diff)
	}
}
