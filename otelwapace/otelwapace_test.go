package otelwapace_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/otelwapace"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/throughput"
)

const (
	number  = "106540352242922"
	alice   = "+237690000001"
	aliceID = "237690000001"
	token   = "OTEL_TEST_TOKEN_d1c3"
)

// rig is a Client instrumented with the real SDK: a manual reader and a
// span recorder.
type rig struct {
	srv    *cloudapitest.Server
	c      *cloudapi.Client
	in     *otelwapace.Instrumentation
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
}

func newRig(t *testing.T, opts ...cloudapi.Option) *rig {
	t.Helper()
	r := &rig{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()); _ = tp.Shutdown(context.Background()) })
	var err error
	if r.in, err = otelwapace.New(otelwapace.WithMeterProvider(mp), otelwapace.WithTracerProvider(tp)); err != nil {
		t.Fatal(err)
	}
	r.srv = cloudapitest.NewServer(t, cloudapitest.WithToken(token), cloudapitest.WithThroughput(throughput.Upgraded))
	base := []cloudapi.Option{cloudapi.WithThroughput(throughput.Upgraded), cloudapi.WithHTTPClient(r.srv.Client()),
		cloudapi.WithBaseURL(cloudapitest.BaseURL)}
	base = append(base, r.in.ClientOptions()...)
	if r.c, err = cloudapi.New(token, append(base, opts...)...); err != nil {
		t.Fatal(err)
	}
	return r
}

// collect reads the metrics, by name.
func (r *rig) collect(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelwapace.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// attrs renders an attribute set as "k=v,k=v" (sorted by key).
func attrs(s attribute.Set) string {
	var b []string
	for _, kv := range s.ToSlice() {
		b = append(b, string(kv.Key)+"="+kv.Value.String())
	}
	return strings.Join(b, ",")
}

func sums(t *testing.T, a metricdata.Aggregation) map[string]int64 {
	t.Helper()
	s, ok := a.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("aggregation %T, want an int64 sum", a)
	}
	out := map[string]int64{}
	for _, p := range s.DataPoints {
		out[attrs(p.Attributes)] = p.Value
	}
	return out
}

type hist struct {
	Count uint64
	Sum   float64
}

func histograms(t *testing.T, a metricdata.Aggregation) map[string]hist {
	t.Helper()
	h, ok := a.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("aggregation %T, want a float64 histogram", a)
	}
	out := map[string]hist{}
	for _, p := range h.DataPoints {
		out[attrs(p.Attributes)] = hist{p.Count, p.Sum}
	}
	return out
}

const dest = "messaging.destination.name=" + number

func TestSendMetricsAndSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		ctx := t.Context()
		// A burst of three, then a fourth that waits for the pair's debt
		// (18 s and the margin), then a refusal Meta makes for a pair the
		// Client did not know was in debt: retried after the hold.
		if _, err := r.c.SendBurst(ctx, number, cloudapi.Text(alice, "1/3"), cloudapi.Text(alice, "2/3"), cloudapi.Text(alice, "3/3")); err != nil {
			t.Fatal(err)
		}
		if _, err := r.c.Send(ctx, number, cloudapi.Text(alice, "4")); err != nil {
			t.Fatal(err)
		}
		const bob = "+237690000002"
		r.srv.FailNextFor(bob, errcodes.PairRateLimit)
		if _, err := r.c.Send(ctx, number, cloudapi.Text(bob, "hi")); err != nil {
			t.Fatal(err)
		}
		// A failure for good.
		const carol = "+237690000003"
		r.srv.FailNextFor(carol, errcodes.Code(131049))
		if _, err := r.c.Send(ctx, number, cloudapi.Text(carol, "x")); cloudapi.StateOf(err) != cloudapi.StateFailed {
			t.Fatalf("carol: %v", err)
		}

		m := r.collect(t)
		sys := "messaging.operation.name=send,messaging.system=whatsapp,wapace.outcome="
		wantSent := map[string]int64{
			dest + "," + sys + "accepted":                      5,
			"error.type=failed," + dest + "," + sys + "failed": 1,
		}
		if diff := cmp.Diff(wantSent, sums(t, m[otelwapace.MetricSentMessages])); diff != "" {
			t.Errorf("%s (-want +got):\n%s", otelwapace.MetricSentMessages, diff)
		}
		if diff := cmp.Diff(map[string]int64{
			dest + ",messaging.system=whatsapp,wapace.code=131049": 1,
			dest + ",messaging.system=whatsapp,wapace.code=131056": 1,
		}, sums(t, m[otelwapace.MetricRefusals])); diff != "" {
			t.Errorf("%s (-want +got):\n%s", otelwapace.MetricRefusals, diff)
		}
		waits := histograms(t, m[otelwapace.MetricPacingWait])
		pair := waits[dest+",messaging.system=whatsapp,wapace.limit=pair"]
		// The 4th message's wait (18 s + margin) and bob's retry after
		// the hold: two waits, held by the pair.
		if pair.Count != 2 || pair.Sum < 18 {
			t.Errorf("pair waits %+v (all: %v)", pair, waits)
		}
		if none := waits[dest+",messaging.system=whatsapp,wapace.limit=none"]; none.Count != 5 || none.Sum != 0 {
			t.Errorf("unpaced attempts %+v (all: %v)", none, waits)
		}
		durs := histograms(t, m[otelwapace.MetricOperationDuration])
		op := ",messaging.operation.name=send,messaging.operation.type=send,messaging.system=whatsapp"
		if d := durs[dest+op]; d.Count != 5 {
			t.Errorf("accepted request durations %+v (all %v)", d, durs)
		}
		if d := durs["error.type=refused,"+dest+op]; d.Count != 1 {
			t.Errorf("refused request durations %+v (all %v)", d, durs)
		}

		// Spans: one per send, with a wait and an attempt per request.
		spans := r.spans.Ended()
		byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
		for _, s := range spans {
			byID[s.SpanContext().SpanID()] = s
		}
		children := map[trace.SpanID][]string{}
		var sends []sdktrace.ReadOnlySpan
		for _, s := range spans {
			if p, ok := byID[s.Parent().SpanID()]; ok {
				children[p.SpanContext().SpanID()] = append(children[p.SpanContext().SpanID()], s.Name())
			} else {
				sends = append(sends, s)
			}
			for _, kv := range s.Attributes() {
				if strings.Contains(kv.Value.String(), aliceID[3:]) {
					t.Errorf("span %s attribute %s carries a recipient: %s", s.Name(), kv.Key, kv.Value.String())
				}
			}
		}
		if len(sends) != 4 {
			t.Fatalf("%d root spans, want 4 sends", len(sends))
		}
		var got [][]string
		for _, s := range sends {
			if s.Name() != "send "+number || s.SpanKind() != trace.SpanKindProducer {
				t.Errorf("send span %q kind %v", s.Name(), s.SpanKind())
			}
			got = append(got, children[s.SpanContext().SpanID()])
		}
		want := [][]string{
			{"attempt", "attempt", "attempt"},
			{"wait", "attempt"},
			{"attempt", "wait", "attempt"},
			{"attempt"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("children of the send spans (-want +got):\n%s", diff)
		}
		last := sends[3]
		at := map[attribute.Key]string{}
		for _, kv := range last.Attributes() {
			at[kv.Key] = kv.Value.String()
		}
		if at[otelwapace.AttrOutcome] != "failed" || at[otelwapace.AttrCode] != "131049" || at["messaging.system"] != "whatsapp" || at["messaging.destination.name"] != number {
			t.Errorf("failed send's attributes %v", at)
		}
		if last.Status().Code.String() != "Error" {
			t.Errorf("failed send's status %v", last.Status())
		}
		// The wait span covers the wait, on the Client's clock.
		for _, s := range spans {
			if s.Name() == "wait" && s.Parent().SpanID() == sends[1].SpanContext().SpanID() {
				if d := s.EndTime().Sub(s.StartTime()); d < 18*time.Second {
					t.Errorf("wait span lasts %v", d)
				}
			}
		}
	})
}

func TestBackpressureCountsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		ctx := t.Context()
		if _, err := r.c.Send(ctx, number, cloudapi.Text(alice, "1")); err != nil {
			t.Fatal(err)
		}
		// The next one would wait 6 s; its deadline is in 1 s.
		m := cloudapi.Text(alice, "2")
		m.ExpiresAt = time.Now().Add(time.Second)
		if _, err := r.c.Send(ctx, number, m); cloudapi.StateOf(err) != cloudapi.StateRefused {
			t.Fatalf("Send = %v, want refused", err)
		}
		got := sums(t, r.collect(t)[otelwapace.MetricSentMessages])
		if n := got["error.type=refused,"+dest+",messaging.operation.name=send,messaging.system=whatsapp,wapace.outcome=refused"]; n != 1 {
			t.Errorf("refused count %d (all %v)", n, got)
		}
	})
}

func TestNoopProvidersHookNothing(t *testing.T) {
	in, err := otelwapace.New(otelwapace.WithMeterProvider(metricnoop.NewMeterProvider()), otelwapace.WithTracerProvider(tracenoop.NewTracerProvider()))
	if err != nil {
		t.Fatal(err)
	}
	if o := in.ClientOptions(); len(o) != 0 {
		t.Errorf("ClientOptions = %d options, want none", len(o))
	}
	if o := in.OutboxOptions(); len(o) != 0 {
		t.Errorf("OutboxOptions = %d options, want none", len(o))
	}
	if _, err := otelwapace.New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	if _, err := otelwapace.New(otelwapace.WithMeterProvider(nil)); err == nil {
		t.Error("nil meter provider accepted")
	}
}

func TestTierGauges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tier := throughput.NewTier(throughput.Tier250)
		r := newRig(t, cloudapi.WithTier(tier))
		reg, err := r.in.ObserveTier("acme", tier)
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
		for _, to := range []string{"+237690000011", "+237690000012"} {
			if _, err := r.c.Send(t.Context(), number, cloudapi.Template(to, "promo", "en")); err != nil {
				t.Fatal(err)
			}
		}
		m := r.collect(t)
		for name, want := range map[string]int64{otelwapace.MetricTierUsed: 2, otelwapace.MetricTierLimit: 250} {
			g, ok := m[name].(metricdata.Gauge[int64])
			if !ok || len(g.DataPoints) != 1 {
				t.Fatalf("%s = %#v", name, m[name])
			}
			if p := g.DataPoints[0]; p.Value != want || attrs(p.Attributes) != "messaging.system=whatsapp,wapace.portfolio=acme" {
				t.Errorf("%s = %d %s, want %d", name, p.Value, attrs(p.Attributes), want)
			}
		}
	})
}

// TestOutboxTraceAndGauges enqueues under a span, runs the outbox, and
// checks that the dispatch span links to the enqueue's span and parents
// the send's, and that the gauges read the queue.
func TestOutboxTraceAndGauges(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	accepted := make(chan string, 4)
	opts := append(r.in.OutboxOptions(), outbox.WithObserver(func(e outbox.Event) {
		if e.State == outbox.StateAccepted {
			accepted <- e.Key
		}
	}))
	o, err := outbox.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "o.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	reg, err := r.in.ObserveOutbox(o)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	ectx, enq := tp.Tracer("app").Start(ctx, "handle order")
	for _, to := range []string{alice, "+237690000002"} {
		if _, err := o.Enqueue(ectx, number, cloudapi.Text(to, "your order shipped")); err != nil {
			t.Fatal(err)
		}
	}
	enq.End()

	m := r.collect(t)
	items := map[string]int64{}
	for _, p := range m[otelwapace.MetricOutboxItems].(metricdata.Gauge[int64]).DataPoints {
		items[attrs(p.Attributes)] = p.Value
	}
	if items["messaging.system=whatsapp,wapace.state=queued"] != 2 || items["messaging.system=whatsapp,wapace.state=failed"] != 0 || len(items) != 8 {
		t.Errorf("items %v", items)
	}
	if g := m[otelwapace.MetricOutboxOldest].(metricdata.Gauge[float64]); len(g.DataPoints) != 1 || g.DataPoints[0].Value < 0 {
		t.Errorf("oldest %+v", g)
	}

	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- o.Run(rctx, r.c) }()
	for range 2 {
		select {
		case <-accepted:
		case <-time.After(30 * time.Second):
			t.Fatal("items not accepted within 30 s")
		}
	}
	stop()
	<-done

	var dispatches, sends int
	spans := r.spans.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	for _, s := range spans {
		switch {
		case s.Name() == "dispatch "+number:
			dispatches++
			if len(s.Links()) != 1 || s.Links()[0].SpanContext.SpanID() != enq.SpanContext().SpanID() {
				t.Errorf("dispatch links %+v, want the enqueue span %v", s.Links(), enq.SpanContext().SpanID())
			}
		case s.Name() == "send "+number:
			sends++
			if p, ok := byID[s.Parent().SpanID()]; !ok || p.Name() != "dispatch "+number {
				t.Errorf("send span's parent is not a dispatch span")
			}
		}
	}
	if dispatches != 2 || sends != 2 {
		t.Errorf("%d dispatch and %d send spans, want 2 each", dispatches, sends)
	}
}
