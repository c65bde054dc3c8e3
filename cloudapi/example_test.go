package cloudapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
)

const from = "106540352242922" // the business number's phone number ID

// newClient returns a Client talking in memory to a fake Meta: the way to
// run a sender offline (in a test, pass t to cloudapitest.NewServer and run
// inside testing/synctest to simulate time).
func newClient(meta *cloudapitest.Server) *cloudapi.Client {
	client, err := cloudapi.New("ACCESS_TOKEN",
		cloudapi.WithHTTPClient(meta.Client()),
		cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		panic(err)
	}
	return client
}

// Send a message through a fake Meta, and see how each kind of failure
// comes back.
func Example() {
	meta := cloudapitest.NewServer(nil) // in a test: cloudapitest.NewServer(t)
	defer meta.Close()
	client := newClient(meta)
	ctx := context.Background()

	res, err := client.Send(ctx, from, cloudapi.Text("+237 690 00 00 01", "Your order has shipped"))
	fmt.Println(res.MessageID, res.WaID, err)

	// Meta declines a marketing template for this user today: not retried.
	meta.FailNext(errcodes.MarketingLimit)
	_, err = client.Send(ctx, from, cloudapi.Template("+237 690 00 00 02", "spring_sale", "en"))
	fmt.Println(cloudapi.StateOf(err), errors.Is(err, errcodes.MarketingLimit))

	// The connection drops after Meta read the request: never resent.
	meta.Script(cloudapitest.Failure{Reset: true})
	_, err = client.Send(ctx, from, cloudapi.Text("+237 690 00 00 04", "Payment received"))
	fmt.Println(errors.Is(err, cloudapi.ErrSubmittedUnknown), len(meta.Requests()))
	// Output:
	// wamid.TEST1 237690000001 <nil>
	// failed true
	// true 3
}

// Send one message; a repeated idempotency key sends nothing again.
func ExampleClient_Send() {
	meta := cloudapitest.NewServer(nil)
	defer meta.Close()
	client := newClient(meta)

	m := cloudapi.Text("CO.1949266959121697", "Hi! Your table is ready.") // a BSUID works like a number
	m.IdempotencyKey = "booking-1842"
	res, err := client.Send(context.Background(), from, m)
	fmt.Println(res.MessageID, res.IdempotencyKey, err)

	again, err := client.Send(context.Background(), from, m)
	fmt.Println(errors.Is(err, cloudapi.ErrDuplicate), again.MessageID, len(meta.Requests()))
	// Output:
	// wamid.TEST1 booking-1842 <nil>
	// true wamid.TEST1 1
}

// Send a three-bubble reply as one burst of the pair: the bubbles go back
// to back (paced only by the number's throughput), in order, and the pair
// owes 3 x 6 s afterwards.
func ExampleClient_SendBurst() {
	meta := cloudapitest.NewServer(nil)
	defer meta.Close()
	client := newClient(meta)

	const user = "+237 690 00 00 03"
	rs, err := client.SendBurst(context.Background(), from,
		cloudapi.Text(user, "Here is your order:"),
		cloudapi.Image(user, cloudapi.Media{Link: "https://example.com/order.png"}),
		cloudapi.Buttons(user, "Is everything right?", cloudapi.Button{ID: "yes", Title: "Yes"}, cloudapi.Button{ID: "no", Title: "Change it"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rs {
		fmt.Println(r.MessageID, r.SentAt.Sub(rs[0].SentAt) < time.Second)
	}
	// Output:
	// wamid.TEST1 true
	// wamid.TEST2 true
	// wamid.TEST3 true
}

// Tell from one error what happened to a message, and retry only what is
// safe to retry.
func Example_errors() {
	meta := cloudapitest.NewServer(nil)
	defer meta.Close()
	client := newClient(meta)
	ctx := context.Background()

	// A one-time code behind a 3-bubble reply would wait 18 s for the pair:
	// past its 10 s freshness, so it is refused at once, nothing sent.
	const user = "+237 690 00 00 05"
	client.SendBurst(ctx, from, cloudapi.Text(user, "1"), cloudapi.Text(user, "2"), cloudapi.Text(user, "3"))
	otp := cloudapi.AuthenticationTemplate(user, "login_code", "en", "482913")
	otp.ExpiresAt = time.Now().Add(10 * time.Second)
	_, err := client.Send(ctx, from, otp)

	var bp *cloudapi.BackpressureError
	var ve *cloudapi.ValidationError
	switch {
	case err == nil:
		fmt.Println("accepted")
	case errors.As(err, &ve):
		fmt.Println("fix the message:", ve.Field)
	case errors.As(err, &bp): // not sent: a limit was full
		fmt.Println(cloudapi.StateOf(err), bp.Limit, int(bp.Code), bp.Wait.Round(time.Second))
	case errors.Is(err, cloudapi.ErrSubmittedUnknown): // may have been sent: reconcile, never resend
		fmt.Println("reconcile from status webhooks")
	default: // failed for good: se.Err is Meta's *errcodes.Error
		fmt.Println(cloudapi.StateOf(err))
	}

	// backoff.Retry honours the backpressure's RetryAfter: it finds the
	// method with errors.As.
	var r interface{ RetryAfter() time.Duration } = bp
	fmt.Println(r.RetryAfter() == bp.Wait)
	// Output:
	// refused pair 131056 18s
	// true
}

// Reuse the Client's classification of an answer with your own HTTP.
func ExampleCheckResponse() {
	meta := cloudapitest.NewServer(nil)
	defer meta.Close()
	meta.FailNext(errcodes.ThroughputLimit)
	body := `{"messaging_product":"whatsapp","to":"237690000001","type":"text","text":{"body":"hi"}}`
	req, _ := http.NewRequest(http.MethodPost, cloudapitest.BaseURL+"/"+cloudapi.DefaultAPIVersion+"/"+from+"/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer ACCESS_TOKEN")
	resp, err := meta.Client().Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	_, err = cloudapi.CheckResponse(resp)
	var e *errcodes.Error
	fmt.Println(errors.As(err, &e), int(e.Code), e.Class().Hold)
	// Output:
	// true 130429 phone_number
}
