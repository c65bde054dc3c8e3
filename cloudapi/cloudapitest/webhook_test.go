package cloudapitest_test

import (
	"testing"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
)

// TestStatusBodyBSUID: a status for a user known only by a BSUID carries
// recipient_user_id and no phone number, as Meta sends it; played statuses
// exist.
func TestStatusBodyBSUID(t *testing.T) {
	t.Parallel()
	srv := cloudapitest.NewServer(t)
	body := srv.StatusBody(
		cloudapitest.Played(cloudapitest.Request{PhoneNumberID: "1", To: "CO.1949266959121697", MessageID: "wamid.B"}),
		cloudapitest.Delivered(cloudapitest.Request{PhoneNumberID: "1", To: "237690000001", MessageID: "wamid.P"}),
	)
	n, err := webhook.Parse(body)
	if err != nil || len(n.Problems) != 0 {
		t.Fatalf("Parse = %v, %v", n, err)
	}
	sts := n.Entry[0].Changes[0].Value.Statuses
	if len(sts) != 2 {
		t.Fatalf("%d statuses", len(sts))
	}
	if s := sts[0]; s.Status != "played" || s.RecipientUserID != "CO.1949266959121697" || s.RecipientID != "" {
		t.Errorf("BSUID status %+v", s)
	}
	if s := sts[1]; s.RecipientID != "237690000001" || s.RecipientUserID != "" {
		t.Errorf("phone status %+v", s)
	}
}

func TestSign(t *testing.T) {
	t.Parallel()
	body := []byte(`{"object":"whatsapp_business_account"}`)
	if err := webhook.VerifySignature(body, cloudapitest.Sign(body, "s"), "s"); err != nil {
		t.Errorf("VerifySignature(Sign) = %v", err)
	}
	if err := webhook.VerifySignature(body, cloudapitest.Sign(body, "other"), "s"); err == nil {
		t.Error("a signature with another secret verified")
	}
}
