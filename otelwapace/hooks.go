package otelwapace

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
)

// clientHooks implements cloudapi.Hooks.
type clientHooks struct{ in *Instrumentation }

var _ cloudapi.Hooks = clientHooks{}

// SendStart starts the send's span (a producer span named "send" and the
// business number ID, as the messaging conventions name spans).
func (h clientHooks) SendStart(ctx context.Context, from string, n int) context.Context {
	in := h.in
	if !in.tracing {
		return ctx
	}
	ctx, _ = in.tracer.Start(ctx, "send "+from, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(system, attrDestination.String(from), attrOpName.String("send"), attrOpType.String("send"),
			attrBatchCount.Int(n)))
	return ctx
}

// Attempt records the attempt's request duration, its wait, a refusal's
// code, and, when tracing, the wait and the request as child spans of the
// send's, with their instants on the Client's clock.
func (h clientHooks) Attempt(ctx context.Context, ev cloudapi.Event) {
	in := h.in
	limit := limitName(ev.Held)
	if ev.Wait <= 0 {
		limit = "none"
	}
	if in.metrics {
		in.duration.Record(ctx, ev.Duration.Seconds(), in.option(setDuration, ev.From, string(ev.State), 0).rec...)
		in.wait.Record(ctx, max(ev.Wait, 0).Seconds(), in.option(setWait, ev.From, limit, 0).rec...)
		if ev.Code != 0 {
			in.refusals.Add(ctx, 1, in.option(setRefusal, ev.From, "", int(ev.Code)).add...)
		}
	}
	if !in.tracing {
		return
	}
	posted := ev.At.Add(-ev.Duration)
	if ev.Wait > 0 {
		_, w := in.tracer.Start(ctx, "wait", trace.WithTimestamp(posted.Add(-ev.Wait)),
			trace.WithAttributes(AttrLimit.String(limit), AttrAttempt.Int(ev.Attempt)))
		w.End(trace.WithTimestamp(posted))
	}
	_, a := in.tracer.Start(ctx, "attempt", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(posted),
		trace.WithAttributes(AttrAttempt.Int(ev.Attempt), AttrOutcome.String(string(ev.State))))
	if ev.MessageID != "" {
		a.SetAttributes(attrMessageID.String(ev.MessageID))
	}
	if ev.Code != 0 {
		a.SetAttributes(AttrCode.Int(int(ev.Code)))
	}
	if ev.Err != nil {
		a.SetAttributes(attrErrorType.String(string(ev.State)))
		a.SetStatus(codes.Error, errcodes.Sanitize(ev.Err.Error()))
	}
	a.End(trace.WithTimestamp(ev.At))
}

// SendEnd counts each message by its outcome and ends the send's span.
// A message never attempted counts as the send's state when that is
// refused (a deadline the limits could not meet) and as not_submitted
// otherwise (a bubble after one that failed, or a cancelled send).
func (h clientHooks) SendEnd(ctx context.Context, from string, states []cloudapi.SendState, err error) {
	in := h.in
	outcome := cloudapi.StateAccepted
	if err != nil {
		outcome = cloudapi.StateOf(err)
	}
	if in.metrics {
		for _, st := range states {
			if st == "" {
				st = cloudapi.StateNotSubmitted
				if outcome == cloudapi.StateRefused {
					st = cloudapi.StateRefused
				}
			}
			in.sent.Add(ctx, 1, in.option(setSent, from, string(st), 0).add...)
		}
	}
	if !in.tracing {
		return
	}
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(AttrOutcome.String(string(outcome)))
	if err != nil {
		var ge *errcodes.Error
		if errors.As(err, &ge) {
			span.SetAttributes(AttrCode.Int(int(ge.Code)))
		}
		span.SetAttributes(attrErrorType.String(string(outcome)))
		span.SetStatus(codes.Error, errcodes.Sanitize(err.Error()))
	}
	span.End()
}

// outboxTracer implements outbox.Tracer with the W3C trace context, so
// that what is stored does not depend on the global propagator.
type outboxTracer struct{ in *Instrumentation }

var _ outbox.Tracer = outboxTracer{}

var w3c = propagation.TraceContext{}

// Inject returns ctx's traceparent, and its tracestate after a newline.
func (t outboxTracer) Inject(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	s := c["traceparent"]
	if ts := c["tracestate"]; ts != "" && s != "" {
		s += "\n" + ts
	}
	return s
}

// Dispatch starts the span of an item's dispatch, linked to the span its
// Enqueue ran under: the send's span is its child.
func (t outboxTracer) Dispatch(ctx context.Context, it outbox.Item, stored string) (context.Context, func(error)) {
	in := t.in
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(system, attrDestination.String(it.From), attrOpName.String("dispatch"),
			AttrAttempt.Int(it.Attempts))}
	if stored != "" {
		c := propagation.MapCarrier{}
		tp, ts, _ := strings.Cut(stored, "\n")
		c["traceparent"] = tp
		if ts != "" {
			c["tracestate"] = ts
		}
		if sc := trace.SpanContextFromContext(w3c.Extract(context.Background(), c)); sc.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	}
	ctx, span := in.tracer.Start(ctx, "dispatch "+it.From, opts...)
	return ctx, func(err error) {
		outcome := cloudapi.StateAccepted
		if err != nil {
			outcome = cloudapi.StateOf(err)
			span.SetStatus(codes.Error, errcodes.Sanitize(err.Error()))
		}
		span.SetAttributes(AttrOutcome.String(string(outcome)))
		span.End()
	}
}
