package cloudapitest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// SignatureHeader returns the value Meta puts in the X-Hub-Signature-256
// header of a webhook POST carrying body: "sha256=" and the hex HMAC-SHA256
// of body keyed with appSecret. Set it on a request to test a webhook
// handler:
//
//	req.Header.Set("X-Hub-Signature-256", cloudapitest.SignatureHeader(body, secret))
func SignatureHeader(body []byte, appSecret string) string {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
