// Package rawsend posts text messages straight to a fake Meta, the way a
// sender without wapace does, for the examples' comparisons.
package rawsend

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
)

// Text posts a text message from number to to and returns nil when Meta
// accepts it, or Meta's error.
func Text(hc *http.Client, from, to, body string) error {
	return post(hc, from, map[string]any{"messaging_product": "whatsapp", "to": to, "type": "text", "text": map[string]string{"body": body}})
}

// Template posts template name (language "en") from number to to.
func Template(hc *http.Client, from, to, name string) error {
	return post(hc, from, map[string]any{"messaging_product": "whatsapp", "to": to, "type": "template",
		"template": map[string]any{"name": name, "language": map[string]string{"code": "en"}}})
}

func post(hc *http.Client, from string, msg map[string]any) error {
	payload, _ := json.Marshal(msg)
	req, err := http.NewRequest(http.MethodPost, cloudapitest.BaseURL+"/"+cloudapi.DefaultAPIVersion+"/"+from+"/messages", bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer DEMO_TOKEN")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = cloudapi.CheckResponse(resp) // nil, an *errcodes.Error, or a non-Graph failure
	return err
}
