// Package otelwapace instruments wapace with OpenTelemetry: metrics and
// traces of every send, the outbox's queue and the messaging tier. The
// core packages import no telemetry library; they offer hooks
// (cloudapi.Hooks, outbox.Tracer) that this package fills.
//
//	in, err := otelwapace.New() // the global providers
//	c, err := cloudapi.New(token, append(opts, in.ClientOptions()...)...)
//	o, err := outbox.Open(ctx, dsn, append(oopts, in.OutboxOptions()...)...)
//	reg, err := in.ObserveOutbox(o) // gauges of the queue
//
// # Metrics
//
// Following the OpenTelemetry messaging semantic conventions where they
// fit: messaging.system is "whatsapp" and messaging.destination.name the
// business phone number ID. No attribute ever names a recipient, and each
// has a handful of values, so the series stay few.
//
//	messaging.client.sent.messages       counter    messages, by wapace.outcome (accepted, refused,
//	                                                failed, submitted_unknown, not_submitted); error.type
//	                                                too when not accepted
//	messaging.client.operation.duration  histogram  s, each request to Meta; error.type set when
//	                                                not accepted
//	wapace.pacing.wait                   histogram  s, each attempt's wait, by wapace.limit that held
//	                                                it longest: none, pair, number, tier, budget
//	wapace.refusals                      counter    attempts answered with a Meta error code, by
//	                                                wapace.code
//	wapace.outbox.items                  gauge      items, by wapace.state (ObserveOutbox)
//	wapace.outbox.oldest_queued          gauge      s, the oldest queued item's age (ObserveOutbox)
//	wapace.tier.used, wapace.tier.limit  gauges     recipients, by wapace.portfolio (ObserveTier)
//
// # Traces
//
// Each Send or SendBurst is a producer span "send <number ID>", with a
// child "wait" span for the time a message waited for its slot (its
// wapace.limit) and a child "attempt" span per request (wapace.attempt,
// wapace.outcome, wapace.code, messaging.message.id). The send span ends
// with the outcome state, and Meta's code on failure. With OutboxOptions,
// Enqueue stores the caller's trace context (W3C traceparent) with the
// item; the "dispatch <number ID>" span that Run starts for it links to
// that context and is the parent of the send span.
//
// # Cost
//
// With the API's no-op providers (metric/noop, trace/noop) ClientOptions
// and OutboxOptions are empty: nothing is hooked and a send allocates
// nothing more. With the SDK's metrics, attribute sets are built once per
// business number and value, and a send allocates nothing more either
// (BenchmarkSendInstrumented, TestNoopAddsNoAllocation). The global
// providers are used as they are, since they may be set later: before
// otel.SetMeterProvider they record nothing but the hooks are called.
package otelwapace
