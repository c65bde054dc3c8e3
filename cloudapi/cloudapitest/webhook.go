package cloudapitest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/errcodes"
)

// SignatureHeader is the header Meta signs webhook bodies in
// ([webhook.SignatureHeader]).
const SignatureHeader = webhook.SignatureHeader

// Sign returns the value of the X-Hub-Signature-256 header Meta would send
// with body: "sha256=" and the hex HMAC-SHA256 of body keyed with appSecret.
// Set it as is:
//
//	req.Header.Set(cloudapitest.SignatureHeader, cloudapitest.Sign(body, secret))
func Sign(body []byte, appSecret string) string {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// StatusUpdate is a status webhook the server can post: the progress of a
// message it accepted.
type StatusUpdate struct {
	// Request is the accepted request the status is about.
	Request Request
	// Status is "sent", "delivered", "read" or "failed".
	Status string
	// Code is the error of a "failed" status.
	Code errcodes.Code
	// At is the status's instant (the server's clock when zero).
	At time.Time
}

// Delivered is the "delivered" status of r.
func Delivered(r Request) StatusUpdate { return StatusUpdate{Request: r, Status: "delivered"} }

// Read is the "read" status of r.
func Read(r Request) StatusUpdate { return StatusUpdate{Request: r, Status: "read"} }

// Played is the "played" status of r (a voice message was played).
func Played(r Request) StatusUpdate { return StatusUpdate{Request: r, Status: "played"} }

// Failed is the "failed" status of r with code (131049, say).
func Failed(r Request, code errcodes.Code) StatusUpdate {
	return StatusUpdate{Request: r, Status: "failed", Code: code}
}

// StatusBody returns the webhook notification for the updates, as Meta
// would post it; webhook.Parse reads it.
func (s *Server) StatusBody(updates ...StatusUpdate) []byte {
	type status struct {
		ID           string            `json:"id"`
		Status       string            `json:"status"`
		Timestamp    string            `json:"timestamp"`
		RecipientID  string            `json:"recipient_id,omitempty"`
		RecipientUID string            `json:"recipient_user_id,omitempty"`
		CallbackData string            `json:"biz_opaque_callback_data,omitempty"`
		Errors       []*errcodes.Error `json:"errors,omitempty"`
	}
	var sts []status
	number := ""
	for _, u := range updates {
		at := u.At
		if at.IsZero() {
			at = s.clock.Now()
		}
		st := status{ID: u.Request.MessageID, Status: u.Status, Timestamp: strconv.FormatInt(at.Unix(), 10),
			CallbackData: u.Request.CallbackData}
		if isBSUID(u.Request.To) {
			// A user known by a business-scoped user ID: Meta sends the
			// BSUID and no phone number.
			st.RecipientUID = u.Request.To
		} else {
			st.RecipientID = u.Request.To
		}
		if u.Status == "failed" {
			cl := errcodes.Lookup(u.Code)
			st.Errors = []*errcodes.Error{{Code: u.Code, Title: cl.Title, Message: cl.Title,
				Details: cl.Title, Href: "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/"}}
		}
		sts = append(sts, st)
		number = u.Request.PhoneNumberID
	}
	body, _ := json.Marshal(map[string]any{
		"object": "whatsapp_business_account",
		"entry": []any{map[string]any{
			"id": "WABA_ID",
			"changes": []any{map[string]any{
				"field": "messages",
				"value": map[string]any{
					"messaging_product": "whatsapp",
					"metadata":          map[string]string{"display_phone_number": "15550000000", "phone_number_id": number},
					"statuses":          sts,
				},
			}},
		}},
	})
	return body
}

// isBSUID reports whether to has the shape of a business-scoped user ID:
// two upper-case letters, a dot, then more (CO.1949266959121697).
func isBSUID(to string) bool {
	return len(to) > 3 && to[2] == '.' && 'A' <= to[0] && to[0] <= 'Z' && 'A' <= to[1] && to[1] <= 'Z'
}

// PostStatus posts the updates to h (a webhook.Handler, say) as a signed
// webhook (signed with the app secret of WithAppSecret) and returns h's
// response.
func (s *Server) PostStatus(h http.Handler, updates ...StatusUpdate) *http.Response {
	body := s.StatusBody(updates...)
	req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
	req.Header.Set(SignatureHeader, Sign(body, s.appSecret))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}
