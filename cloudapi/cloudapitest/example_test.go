package cloudapitest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
)

// Script a throughput refusal and inspect what the fake Meta received.
func Example() {
	meta := cloudapitest.NewServer(nil) // in a test: cloudapitest.NewServer(t)
	defer meta.Close()
	client, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		fmt.Println(err)
		return
	}
	meta.FailNext(errcodes.ThroughputLimit)
	res, err := client.Send(context.Background(), "106540352242922", cloudapi.Text("+237 690 00 00 01", "hello"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("attempts:", res.Attempts)
	for _, r := range meta.Requests() {
		fmt.Println(r.To, r.Type, r.Accepted, int(r.Code))
	}
	// Output:
	// attempts: 2
	// 237690000001 text false 130429
	// 237690000001 text true 0
}

// Script the second request to fail: the first passes, the second is
// refused, and the Client reports each outcome.
func ExampleFailure_nth() {
	meta := cloudapitest.NewServer(nil)
	defer meta.Close()
	client, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		fmt.Println(err)
		return
	}
	meta.Script(cloudapitest.Failure{Nth: 2, Code: errcodes.TemplateNotFound})
	for _, to := range []string{"+237 690 00 00 01", "+237 690 00 00 02"} {
		_, err := client.Send(context.Background(), "106540352242922", cloudapi.Template(to, "order_update", "en"))
		fmt.Println(cloudapi.StateOf(err), errors.Is(err, errcodes.TemplateNotFound))
	}
	// Output:
	// accepted false
	// failed true
}
