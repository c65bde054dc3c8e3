package cloudapi_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
)

// Send a message through a fake Meta, and see how each kind of failure
// comes back.
func Example() {
	meta := cloudapitest.NewServer(nil) // in a test: cloudapitest.NewServer(t)
	defer meta.Close()
	client, err := cloudapi.New("ACCESS_TOKEN",
		cloudapi.WithHTTPClient(meta.Client()),
		cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	const from = "106540352242922"

	res, err := client.Send(ctx, from, cloudapi.Text("+237 690 00 00 01", "Your order has shipped"))
	fmt.Println(res.MessageID, res.WaID, err)

	// Meta declines a marketing template for this user today: not retried.
	meta.FailNext(errcodes.MarketingLimit)
	_, err = client.Send(ctx, from, cloudapi.Template("+237 690 00 00 02", "spring_sale", "en"))
	fmt.Println(cloudapi.StateOf(err), errors.Is(err, errcodes.MarketingLimit))

	// A one-time code behind a 3-bubble reply would wait 18 s for the pair:
	// past its 10 s freshness, so it is refused at once, nothing sent.
	client.SendBurst(ctx, from, cloudapi.Text("+237 690 00 00 03", "1"), cloudapi.Text("+237 690 00 00 03", "2"), cloudapi.Text("+237 690 00 00 03", "3"))
	otp := cloudapi.AuthenticationTemplate("+237 690 00 00 03", "login_code", "en", "482913")
	otp.ExpiresAt = time.Now().Add(10 * time.Second)
	_, err = client.Send(ctx, from, otp)
	var bp *cloudapi.BackpressureError
	if errors.As(err, &bp) {
		fmt.Println(bp.Limit, int(bp.Code), bp.Wait.Round(time.Second), cloudapi.StateOf(err))
	}

	// The connection drops after Meta read the request: never resent.
	meta.Script(cloudapitest.Failure{Reset: true})
	_, err = client.Send(ctx, from, cloudapi.Text("+237 690 00 00 04", "Payment received"))
	fmt.Println(errors.Is(err, cloudapi.ErrSubmittedUnknown), len(meta.Requests()))
	// Output:
	// wamid.TEST1 237690000001 <nil>
	// failed true
	// pair 131056 18s refused
	// true 6
}
