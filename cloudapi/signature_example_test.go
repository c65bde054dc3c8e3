package cloudapi_test

import (
	"errors"
	"fmt"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
)

// Check a webhook body's signature outside webhook.Handler; the errors are
// the webhook package's.
func ExampleVerifySignature() {
	body := []byte(`{"object":"whatsapp_business_account","entry":[]}`)
	fmt.Println(cloudapi.VerifySignature(body, cloudapitest.Sign(body, "app-secret"), "app-secret"))
	err := cloudapi.VerifySignature(body, cloudapitest.Sign(body, "forged"), "app-secret")
	fmt.Println(errors.Is(err, webhook.ErrBadSignature))
	// Output:
	// <nil>
	// true
}
