package cloudapi_test

import (
	"fmt"
	"testing"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
)

// BenchmarkSend measures one Send through the whole path (validation,
// admission, the in-memory fake, classification) with logging off, each
// message to a new recipient so that no pair waits and no number's rate
// binds.
func BenchmarkSend(b *testing.B) {
	const mps = 1 << 30
	srv := cloudapitest.NewServer(b, cloudapitest.WithThroughput(mps))
	c, err := cloudapi.New("BENCH_TOKEN", cloudapi.WithHTTPClient(srv.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL), cloudapi.WithThroughput(mps))
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]cloudapi.Message, b.N)
	for i := range msgs {
		msgs[i] = cloudapi.Text(fmt.Sprintf("+2376%08d", i), "hello")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := c.Send(b.Context(), "106540352242922", msgs[i]); err != nil {
			b.Fatal(err)
		}
	}
}
