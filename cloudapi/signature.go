package cloudapi

import "github.com/wapace/wapace/cloudapi/webhook"

// MaxWebhookBody is the largest webhook body the webhook handler reads:
// [webhook.MaxBody], 3 MiB.
const MaxWebhookBody = webhook.MaxBody

// VerifySignature checks header (the X-Hub-Signature-256 value Meta sends)
// against the HMAC-SHA256 of body keyed with appSecret, in constant time. It
// is [webhook.VerifySignature]; its errors match [webhook.ErrNoAppSecret]
// (an empty appSecret never verifies), [webhook.ErrNoSignature] and
// [webhook.ErrBadSignature] with errors.Is.
func VerifySignature(body []byte, header, appSecret string) error {
	return webhook.VerifySignature(body, header, appSecret)
}
