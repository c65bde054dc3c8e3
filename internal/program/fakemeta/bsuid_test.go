package fakemeta

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/cloudapi/webhook"
)

// A message to a BSUID (sent in "recipient", not "to") is listed with its
// recipient, and its status webhook names it in recipient_user_id. (Both
// were empty: the fake read only "to".)
func TestBSUIDRecipientInspectedAndInWebhooks(t *testing.T) {
	hook, got := statusHook(t, func(s *webhook.Status) string { return s.RecipientID + "|" + s.RecipientUserID })
	url := start(t, "-app-secret", "SECRET", "-webhook", hook)
	body := `{"messaging_product":"whatsapp","recipient":"CO.1949266959121697","type":"text","text":{"body":"hi"}}`
	req, _ := http.NewRequest(http.MethodPost, url+"/v23.0/106540352242922/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer T")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	post(t, url, "+237 690 000 001", "")
	waitWebhooks(t, url, 2)
	resp, err = http.Get(url + "/_fake/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var log []record
	if err := json.NewDecoder(resp.Body).Decode(&log); err != nil {
		t.Fatal(err)
	}
	var tos []string
	for _, r := range log {
		tos = append(tos, r.To)
	}
	if diff := cmp.Diff([]string{"CO.1949266959121697", "237690000001"}, tos); diff != "" {
		t.Errorf("recipients listed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"|CO.1949266959121697", "237690000001|"}, got()); diff != "" {
		t.Errorf("webhook recipients (-want +got):\n%s", diff)
	}
}
