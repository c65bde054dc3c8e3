package cloudapitest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
)

// Sign a hand-written webhook body the way Meta does, for a handler test.
func ExampleSign() {
	body := []byte(`{"object":"whatsapp_business_account","entry":[]}`)
	req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(string(body)))
	req.Header.Set(cloudapitest.SignatureHeader, cloudapitest.Sign(body, "app-secret"))
	fmt.Println(webhook.VerifySignature(body, req.Header.Get(cloudapitest.SignatureHeader), "app-secret"))
	fmt.Println(cloudapitest.Sign(body, "app-secret")[:7])
	// Output:
	// <nil>
	// sha256=
}
