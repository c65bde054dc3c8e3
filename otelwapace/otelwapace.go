package otelwapace

import (
	"errors"
	"fmt"
	"sync"

	"github.com/benbjohnson/clock"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/wapace/wapace/otelwapace"

// The names of the instruments (see the package documentation).
const (
	MetricSentMessages      = "messaging.client.sent.messages"
	MetricOperationDuration = "messaging.client.operation.duration"
	MetricPacingWait        = "wapace.pacing.wait"
	MetricRefusals          = "wapace.refusals"
	MetricOutboxItems       = "wapace.outbox.items"
	MetricOutboxOldest      = "wapace.outbox.oldest_queued"
	MetricTierUsed          = "wapace.tier.used"
	MetricTierLimit         = "wapace.tier.limit"
)

// The attribute keys it sets besides the messaging semantic conventions'.
const (
	// AttrOutcome is a message's or an attempt's state (cloudapi.SendState).
	AttrOutcome = attribute.Key("wapace.outcome")
	// AttrLimit is the limit that held a message: none, pair, number,
	// tier or budget.
	AttrLimit = attribute.Key("wapace.limit")
	// AttrCode is Meta's error code.
	AttrCode = attribute.Key("wapace.code")
	// AttrState is an outbox item's state (outbox.State).
	AttrState = attribute.Key("wapace.state")
	// AttrPortfolio names a messaging tier's portfolio.
	AttrPortfolio = attribute.Key("wapace.portfolio")
	// AttrAttempt counts a message's requests, from 1.
	AttrAttempt = attribute.Key("wapace.attempt")
)

// The messaging semantic conventions' keys (semconv v1.3x).
const (
	attrSystem      = attribute.Key("messaging.system")
	attrDestination = attribute.Key("messaging.destination.name")
	attrOpName      = attribute.Key("messaging.operation.name")
	attrOpType      = attribute.Key("messaging.operation.type")
	attrBatchCount  = attribute.Key("messaging.batch.message_count")
	attrMessageID   = attribute.Key("messaging.message.id")
	attrErrorType   = attribute.Key("error.type")
)

// system is the messaging.system of every measurement.
var system = attrSystem.String("whatsapp")

// Option configures an Instrumentation.
type Option func(*config) error

type config struct {
	mp    metric.MeterProvider
	tp    trace.TracerProvider
	clock clock.Clock
}

// ErrInvalidOption is matched by the error New returns for a bad option.
var ErrInvalidOption = errors.New("otelwapace: invalid option")

// WithMeterProvider records the metrics with mp (otel.GetMeterProvider()
// by default).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return fmt.Errorf("%w: nil meter provider", ErrInvalidOption)
		}
		c.mp = mp
		return nil
	}
}

// WithTracerProvider records the spans with tp (otel.GetTracerProvider()
// by default).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if tp == nil {
			return fmt.Errorf("%w: nil tracer provider", ErrInvalidOption)
		}
		c.tp = tp
		return nil
	}
}

// WithClock reads the present from clk (the real clock by default) when
// observing a Tier: give it the Tier's clock.
func WithClock(clk clock.Clock) Option {
	return func(c *config) error {
		if clk == nil {
			return fmt.Errorf("%w: nil clock", ErrInvalidOption)
		}
		c.clock = clk
		return nil
	}
}

// Instrumentation records the metrics and spans of cloudapi Clients and
// outbox Outboxes. It is safe for concurrent use by multiple goroutines;
// one Instrumentation may serve several Clients.
type Instrumentation struct {
	cfg     config
	metrics bool // the meter provider is not a no-op one
	tracing bool // the tracer provider is not a no-op one
	tracer  trace.Tracer
	meter   metric.Meter

	sent     metric.Int64Counter
	duration metric.Float64Histogram
	wait     metric.Float64Histogram
	refusals metric.Int64Counter

	outboxItems  metric.Int64ObservableGauge
	outboxOldest metric.Float64ObservableGauge
	tierUsed     metric.Int64ObservableGauge
	tierLimit    metric.Int64ObservableGauge

	mu   sync.RWMutex          // protects sets
	sets map[setKey]*setOption // the attribute sets met so far, by what they are made of
}

// New returns an Instrumentation recording with the given providers (the
// global ones by default). Install it with ClientOptions and
// OutboxOptions; observe an outbox's queue with ObserveOutbox and a tier
// with ObserveTier.
func New(opts ...Option) (*Instrumentation, error) {
	cfg := config{clock: clock.New()}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.mp == nil {
		cfg.mp = otel.GetMeterProvider()
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	in := &Instrumentation{cfg: cfg, sets: map[setKey]*setOption{},
		metrics: !isNoopMeter(cfg.mp), tracing: !isNoopTracer(cfg.tp)}
	in.meter = cfg.mp.Meter(ScopeName)
	in.tracer = cfg.tp.Tracer(ScopeName)
	m := in.meter
	var err error
	if in.sent, err = m.Int64Counter(MetricSentMessages, metric.WithUnit("{message}"),
		metric.WithDescription("Messages sent, by outcome state (accepted, refused, failed, submitted_unknown, not_submitted).")); err != nil {
		return nil, err
	}
	if in.duration, err = m.Float64Histogram(MetricOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of each request to the Cloud API."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)); err != nil {
		return nil, err
	}
	if in.wait, err = m.Float64Histogram(MetricPacingWait, metric.WithUnit("s"),
		metric.WithDescription("How long a message waited for its slot, by the limit that held it (none, pair, number, tier, budget)."),
		metric.WithExplicitBucketBoundaries(0, 0.01, 0.05, 0.1, 0.5, 1, 2, 6, 12, 30, 60, 300, 3600)); err != nil {
		return nil, err
	}
	if in.refusals, err = m.Int64Counter(MetricRefusals, metric.WithUnit("{refusal}"),
		metric.WithDescription("Attempts Meta answered with an error code, by code.")); err != nil {
		return nil, err
	}
	if in.outboxItems, err = m.Int64ObservableGauge(MetricOutboxItems, metric.WithUnit("{item}"),
		metric.WithDescription("Outbox items, by state.")); err != nil {
		return nil, err
	}
	if in.outboxOldest, err = m.Float64ObservableGauge(MetricOutboxOldest, metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest queued outbox item (0 when none is queued).")); err != nil {
		return nil, err
	}
	if in.tierUsed, err = m.Int64ObservableGauge(MetricTierUsed, metric.WithUnit("{recipient}"),
		metric.WithDescription("Unique recipients of business-initiated messages in the last 24 hours, by portfolio.")); err != nil {
		return nil, err
	}
	if in.tierLimit, err = m.Int64ObservableGauge(MetricTierLimit, metric.WithUnit("{recipient}"),
		metric.WithDescription("The portfolio's messaging limit (-1: unlimited), by portfolio.")); err != nil {
		return nil, err
	}
	return in, nil
}

// isNoopMeter and isNoopTracer report whether a provider is one of the
// API's no-op providers: nothing is then hooked into the send path.
func isNoopMeter(mp metric.MeterProvider) bool {
	_, ok := mp.(metricnoop.MeterProvider)
	return ok
}

func isNoopTracer(tp trace.TracerProvider) bool {
	_, ok := tp.(tracenoop.TracerProvider)
	return ok
}

// ClientOptions returns the options that instrument a cloudapi.Client:
// none when both providers are no-op ones, so that an uninstrumented
// Client costs nothing.
func (in *Instrumentation) ClientOptions() []cloudapi.Option {
	if !in.metrics && !in.tracing {
		return nil
	}
	return []cloudapi.Option{cloudapi.WithHooks(clientHooks{in})}
}

// OutboxOptions returns the options that carry an Enqueue's trace to the
// span of its item's dispatch: none with a no-op tracer provider. The
// outbox's gauges are registered with ObserveOutbox.
func (in *Instrumentation) OutboxOptions() []outbox.Option {
	if !in.tracing {
		return nil
	}
	return []outbox.Option{outbox.WithTracer(outboxTracer{in})}
}

// setKey names an attribute set by what it is made of.
type setKey struct {
	kind uint8
	from string
	v    string
	n    int
}

const (
	setSent uint8 = iota
	setDuration
	setWait
	setRefusal
)

// setOption is a measurement option made once for an attribute set, so
// that recording allocates nothing.
type setOption struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

// option returns the options of the set (kind, from, v), made on first use.
func (in *Instrumentation) option(kind uint8, from, v string, n int) *setOption {
	k := setKey{kind, from, v, n}
	in.mu.RLock()
	o := in.sets[k]
	in.mu.RUnlock()
	if o != nil {
		return o
	}
	kv := []attribute.KeyValue{system, attrDestination.String(from)}
	switch kind {
	case setSent:
		kv = append(kv, attrOpName.String("send"), AttrOutcome.String(v))
		if v != string(cloudapi.StateAccepted) {
			kv = append(kv, attrErrorType.String(v)) // the conventions' "failed" marker
		}
	case setDuration:
		kv = append(kv, attrOpName.String("send"), attrOpType.String("send"))
		if v != string(cloudapi.StateAccepted) {
			kv = append(kv, attrErrorType.String(v))
		}
	case setWait:
		kv = append(kv, AttrLimit.String(v))
	case setRefusal:
		kv = append(kv, AttrCode.Int(n))
	}
	opt := metric.WithAttributeSet(attribute.NewSet(kv...))
	o = &setOption{add: []metric.AddOption{opt}, rec: []metric.RecordOption{opt}}
	in.mu.Lock()
	if prev := in.sets[k]; prev != nil {
		o = prev
	} else {
		in.sets[k] = o
	}
	in.mu.Unlock()
	return o
}

// limitName names the limit that held a message, for AttrLimit.
func limitName(h errcodes.Hold) string {
	switch h {
	case errcodes.HoldPair:
		return "pair"
	case errcodes.HoldPhoneNumber:
		return "number"
	case errcodes.HoldTier:
		return "tier"
	case errcodes.HoldApp, errcodes.HoldWABA:
		return "budget"
	}
	return "none"
}
