package cloudapi_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
)

// BenchmarkSend measures one Send through the whole path (validation,
// admission, the in-memory fake, classification) with logging off, each
// message to a new recipient so that no pair waits and no number's rate
// binds.
func BenchmarkSend(b *testing.B) {
	const mps = 10_000                                                   // the most a throughput.Limiter accepts
	srv := cloudapitest.NewServer(b, cloudapitest.WithThroughput(1<<30)) // the fake never refuses
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
	froms := make([]string, 1000)
	for i := range froms {
		froms[i] = fmt.Sprintf("1065403522%05d", i)
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := c.Send(b.Context(), froms[i%len(froms)], msgs[i]); err != nil {
			b.Fatal(err)
		}
	}
}

// cannedOK answers every request with the same success, so that
// BenchmarkSendClientOnly measures the Client alone.
type cannedOK struct{}

func (cannedOK) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Request: r,
		Body: io.NopCloser(strings.NewReader(`{"messaging_product":"whatsapp","contacts":[{"input":"x","wa_id":"1"}],"messages":[{"id":"wamid.B"}]}`))}, nil
}

// BenchmarkSendClientOnly is BenchmarkSend without the fake: the Client's
// own cost per message (validation, admission, request, classification).
// Messages rotate over 1,000 business numbers so that no number's rate
// (at most 10,000 messages a second) makes the benchmark wait.
func BenchmarkSendClientOnly(b *testing.B) {
	const mps = 10_000 // the most a throughput.Limiter accepts
	c, err := cloudapi.New("BENCH_TOKEN", cloudapi.WithHTTPClient(&http.Client{Transport: cannedOK{}}), cloudapi.WithThroughput(mps))
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]cloudapi.Message, b.N)
	for i := range msgs {
		msgs[i] = cloudapi.Text(fmt.Sprintf("+2376%08d", i), "hello")
	}
	b.ReportAllocs()
	b.ResetTimer()
	froms := make([]string, 1000)
	for i := range froms {
		froms[i] = fmt.Sprintf("1065403522%05d", i)
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := c.Send(b.Context(), froms[i%len(froms)], msgs[i]); err != nil {
			b.Fatal(err)
		}
	}
}
