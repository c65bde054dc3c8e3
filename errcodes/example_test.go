package errcodes_test

import (
	"errors"
	"fmt"

	"github.com/wapace/wapace/errcodes"
)

func Example() {
	body := []byte(`{"error":{"message":"(#131056) (Business Account, Consumer Account) pair rate limit hit",` +
		`"type":"OAuthException","code":131056,"fbtrace_id":"AbC1"}}`)
	e, err := errcodes.Parse(400, body)
	if err != nil {
		fmt.Println(err)
		return
	}
	sendErr := fmt.Errorf("send to customer: %w", e)

	// Branch on the code with errors.Is...
	fmt.Println(errors.Is(sendErr, errcodes.PairRateLimit))
	// ...and reach the details with errors.As.
	var ge *errcodes.Error
	if errors.As(sendErr, &ge) {
		cl := ge.Class()
		fmt.Println(cl.Scope, cl.Retryable, cl.Throttling)
	}
	// Output:
	// true
	// pair true true
}

func ExampleLookup() {
	for _, c := range []errcodes.Code{errcodes.PairRateLimit, errcodes.ThroughputLimit, errcodes.MarketingLimit, errcodes.Maintenance, 424242} {
		cl := errcodes.Lookup(c)
		fmt.Printf("%d known=%v scope=%v retryable=%v wait=%v\n", c, cl.Known, cl.Scope, cl.Retryable, cl.Wait)
	}
	// Output:
	// 131056 known=true scope=pair retryable=true wait=0s
	// 130429 known=true scope=phone_number retryable=true wait=1s
	// 131049 known=true scope=recipient retryable=true wait=24h0m0s
	// 131057 known=true scope=phone_number retryable=true wait=10s
	// 424242 known=false scope=unknown retryable=false wait=0s
}

func ExampleParse_notGraph() {
	_, err := errcodes.Parse(502, []byte("<html>Bad Gateway</html>"))
	fmt.Println(err)
	fmt.Println(errors.Is(err, errcodes.ErrNotGraphError))
	// Output:
	// errcodes: http 502 body is not a Graph API error: invalid JSON
	// true
}

// One table decides every action: which limiter a refusal holds, and
// whether the answer proves that nothing was sent at its HTTP status.
func ExampleClass_NotSent() {
	for _, a := range []struct {
		code   errcodes.Code
		status int
	}{
		{errcodes.PairRateLimit, 400},
		{errcodes.PairRateLimit, 500},
		{errcodes.MaintenanceMode, 503},
		{errcodes.SomethingWentWrong, 400},
		{errcodes.BusinessRateLimit, 400},
	} {
		cl := errcodes.Lookup(a.code)
		fmt.Printf("%d at %d: hold=%v notSent=%v\n", a.code, a.status, cl.Hold, cl.NotSent(a.status))
	}
	// Output:
	// 131056 at 400: hold=pair notSent=true
	// 131056 at 500: hold=pair notSent=false
	// 2494100 at 503: hold=phone_number notSent=true
	// 131000 at 400: hold=none notSent=false
	// 131064 at 400: hold=tier notSent=true
}

// Consecutive refusals of a paced limit hold it longer: HoldAfter gives the
// hold after n refusals, which every wapace limiter applies.
func ExampleClass_HoldAfter() {
	for _, c := range []errcodes.Code{errcodes.ThroughputLimit, errcodes.Maintenance, errcodes.MaintenanceMode} {
		cl := errcodes.Lookup(c)
		fmt.Println(int(c), cl.HoldAfter(0), cl.HoldAfter(1), cl.HoldAfter(2), cl.HoldAfter(10))
	}
	fmt.Println("pair hold stands for", int(errcodes.HoldPair.Code()))
	// Output:
	// 130429 1s 2s 4s 30s
	// 131057 10s 20s 40s 1m0s
	// 2494100 2m0s 2m0s 2m0s 2m0s
	// pair hold stands for 131056
}
