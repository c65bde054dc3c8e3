package otelwapace_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/otelwapace"
)

// Expose the metrics on /metrics for Prometheus, through the OTel
// Prometheus exporter, and scrape them once.
func Example_prometheus() {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer mp.Shutdown(context.Background())
	in, err := otelwapace.New(otelwapace.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}

	fake := cloudapitest.NewServer(nil)
	defer fake.Close()
	opts := append([]cloudapi.Option{cloudapi.WithHTTPClient(fake.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL)}, in.ClientOptions()...)
	c, err := cloudapi.New("TOKEN", opts...)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Send(context.Background(), "106540352242922", cloudapi.Text("+237690000001", "hello")); err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "messaging_client_sent_messages_total") || strings.HasPrefix(l, "wapace_pacing_wait_seconds_count") {
			fmt.Println(l)
		}
	}
	// Output:
	// messaging_client_sent_messages_total{messaging_destination_name="106540352242922",messaging_operation_name="send",messaging_system="whatsapp",wapace_outcome="accepted"} 1
	// wapace_pacing_wait_seconds_count{messaging_destination_name="106540352242922",messaging_system="whatsapp",wapace_limit="none"} 1
}
