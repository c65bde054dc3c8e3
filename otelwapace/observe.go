package otelwapace

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/throughput"
)

// allStates lists every outbox state, so that a state with no item
// reports 0 rather than vanishing from the gauge.
var allStates = []outbox.State{outbox.StateQueued, outbox.StateSending, outbox.StateAccepted, outbox.StateSubmittedUnknown,
	outbox.StateDelivered, outbox.StateRead, outbox.StateFailed, outbox.StateExpired}

// ObserveOutbox reports o's queue at each collection: wapace.outbox.items
// by state and wapace.outbox.oldest_queued, from one o.Snapshot (so read
// it no more often than the reader collects). Observe one Outbox per
// Instrumentation (its measurements carry no outbox name); unregister it
// before closing o.
func (in *Instrumentation) ObserveOutbox(o *outbox.Outbox) (metric.Registration, error) {
	if o == nil {
		return nil, errors.New("otelwapace: observe: nil outbox")
	}
	opts := make(map[outbox.State]metric.ObserveOption, len(allStates))
	for _, st := range allStates {
		opts[st] = metric.WithAttributeSet(attribute.NewSet(system, AttrState.String(st.String())))
	}
	oldest := metric.WithAttributeSet(attribute.NewSet(system))
	return in.meter.RegisterCallback(func(ctx context.Context, ob metric.Observer) error {
		s, err := o.Snapshot(ctx)
		if err != nil {
			return err
		}
		for _, st := range allStates {
			ob.ObserveInt64(in.outboxItems, int64(s.Counts[st]), opts[st])
		}
		age := 0.0
		if !s.OldestQueued.IsZero() {
			age = max(s.At.Sub(s.OldestQueued).Seconds(), 0)
		}
		ob.ObserveFloat64(in.outboxOldest, age, oldest)
		return nil
	}, in.outboxItems, in.outboxOldest)
}

// ObserveTier reports t at each collection as wapace.tier.used (its count
// now, on WithClock's clock) and wapace.tier.limit (-1: unlimited), with
// the portfolio's name (or ID) as wapace.portfolio.
func (in *Instrumentation) ObserveTier(portfolio string, t *throughput.Tier) (metric.Registration, error) {
	if t == nil {
		return nil, errors.New("otelwapace: observe: nil tier")
	}
	opt := metric.WithAttributeSet(attribute.NewSet(system, AttrPortfolio.String(portfolio)))
	return in.meter.RegisterCallback(func(ctx context.Context, ob metric.Observer) error {
		ob.ObserveInt64(in.tierUsed, int64(t.Count(in.cfg.clock.Now())), opt)
		ob.ObserveInt64(in.tierLimit, int64(t.Limit()), opt)
		return nil
	}, in.tierUsed, in.tierLimit)
}
