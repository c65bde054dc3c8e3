package otelwapace_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/otelwapace"
)

// cannedOK answers every request with the same success, so that the
// benchmarks measure the Client and its instrumentation alone.
type cannedOK struct{}

func (cannedOK) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Request: r,
		Body: io.NopCloser(strings.NewReader(`{"messaging_product":"whatsapp","contacts":[{"input":"x","wa_id":"1"}],"messages":[{"id":"wamid.B"}]}`))}, nil
}

// instrumentations are the cases the benchmark compares: none (the
// floor), the API's no-op providers, and the SDK (metrics; metrics and
// traces).
func instrumentations(tb testing.TB) []struct {
	name string
	opts []cloudapi.Option
} {
	noop, err := otelwapace.New(otelwapace.WithMeterProvider(metricnoop.NewMeterProvider()), otelwapace.WithTracerProvider(tracenoop.NewTracerProvider()))
	if err != nil {
		tb.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	metrics, err := otelwapace.New(otelwapace.WithMeterProvider(mp), otelwapace.WithTracerProvider(tracenoop.NewTracerProvider()))
	if err != nil {
		tb.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	all, err := otelwapace.New(otelwapace.WithMeterProvider(mp), otelwapace.WithTracerProvider(tp))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = mp.Shutdown(context.Background()); _ = tp.Shutdown(context.Background()) })
	return []struct {
		name string
		opts []cloudapi.Option
	}{{"none", nil}, {"noop", noop.ClientOptions()}, {"sdk-metrics", metrics.ClientOptions()}, {"sdk-metrics-traces", all.ClientOptions()}}
}

func newBenchClient(tb testing.TB, opts []cloudapi.Option) *cloudapi.Client {
	const mps = 10_000 // the most a throughput.Limiter accepts
	c, err := cloudapi.New("BENCH_TOKEN", append([]cloudapi.Option{cloudapi.WithHTTPClient(&http.Client{Transport: cannedOK{}}), cloudapi.WithThroughput(mps)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// BenchmarkSendInstrumented is one Send (each to a new recipient, over
// 1,000 business numbers so that no rate binds) uninstrumented and
// instrumented: the no-op case must allocate exactly what "none" does.
func BenchmarkSendInstrumented(b *testing.B) {
	froms := make([]string, 1000)
	for i := range froms {
		froms[i] = fmt.Sprintf("1065403522%05d", i)
	}
	for _, tc := range instrumentations(b) {
		b.Run(tc.name, func(b *testing.B) {
			c := newBenchClient(b, tc.opts)
			msgs := make([]cloudapi.Message, b.N)
			for i := range msgs {
				msgs[i] = cloudapi.Text(fmt.Sprintf("+2376%08d", i), "hello")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := c.Send(b.Context(), froms[i%len(froms)], msgs[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestNoopAddsNoAllocation measures the allocations of a Send with the
// no-op providers against an uninstrumented Client's, and those the SDK's
// metrics add (attribute sets are made once: nothing per send beyond the
// SDK's own).
func TestNoopAddsNoAllocation(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts: skipped with -short")
	}
	if raceEnabled {
		// Under the race detector sync.Pool drops a random share of what
		// is put back (net/http's and the SDK's pools among them), so a
		// count moves by one now and then whatever the code; the run
		// without -race asserts it.
		t.Skip("allocation counts: not the program's under the race detector")
	}
	// The workload's own allocations vary by one now and then (maps of
	// the limiters growing, pools emptied by a GC): each case is measured
	// in five interleaved rounds, and its least count kept.
	cases := instrumentations(t)
	clients := make([]*cloudapi.Client, len(cases))
	for i, tc := range cases {
		clients[i] = newBenchClient(t, tc.opts)
	}
	n := 0
	send := func(c *cloudapi.Client) func() {
		return func() {
			n++
			if _, err := c.Send(t.Context(), fmt.Sprintf("1065403522%05d", n%1000), cloudapi.Text(fmt.Sprintf("+2376%08d", n), "hello")); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range clients { // warm the limiters' maps and the attribute sets
		for range 2000 {
			send(c)()
		}
	}
	allocs := map[string]float64{}
	for range 5 {
		for i, tc := range cases {
			a := testing.AllocsPerRun(300, send(clients[i]))
			if old, ok := allocs[tc.name]; !ok || a < old {
				allocs[tc.name] = a
			}
		}
	}
	t.Logf("allocations per send: %v", allocs)
	if allocs["noop"] > allocs["none"] {
		t.Errorf("no-op instrumentation: %.1f allocations per send, uninstrumented %.1f", allocs["noop"], allocs["none"])
	}
	if allocs["sdk-metrics"] > allocs["none"]+1 { // measured equal; one of slack for the SDK's own pools
		t.Errorf("SDK metrics add %.1f allocations per send", allocs["sdk-metrics"]-allocs["none"])
	}
}
