package outbox

import (
	"context"
	"database/sql"
	"strings"
)

// maxTraceContext bounds the trace context stored with an item: a W3C
// traceparent is 55 bytes, with tracestate a few hundred.
const maxTraceContext = 1024

// Tracer carries the trace of an Enqueue to the dispatch of its item, which
// happens later and usually in another process (package otelwapace
// implements it with OpenTelemetry; outbox imports no telemetry library).
// Install it with WithTracer. Its methods must not block and must be safe
// for concurrent use by multiple goroutines.
type Tracer interface {
	// Inject returns the trace context of ctx, in a text form of the
	// Tracer's choosing (such as a W3C traceparent), to be stored with an
	// item that Enqueue or EnqueueTx stores under ctx; "" stores none. A
	// text longer than 1 KiB is not stored.
	Inject(ctx context.Context) string
	// Dispatch is called by Run as it hands item it to the Client, with
	// the trace context stored at its enqueue ("" for none). The context
	// it returns is the send's; end is called with the send's error once
	// the Client has returned.
	Dispatch(ctx context.Context, it Item, stored string) (sendCtx context.Context, end func(err error))
}

// WithTracer stores the trace context of every Enqueue with its item, and
// calls t's Dispatch around each send (see Tracer).
func WithTracer(t Tracer) Option {
	return func(c *config) error {
		if t == nil {
			return optErr("nil tracer")
		}
		c.tracer = t
		return nil
	}
}

// storeTraces stores, in tx, the trace context of each call among calls
// whose item was inserted, in one statement. It does nothing without a
// Tracer.
func (o *Outbox) storeTraces(ctx context.Context, tx *sql.Tx, calls []*enqCall, inserted map[string]bool) error {
	t := o.cfg.tracer
	if t == nil {
		return nil
	}
	var cases, in strings.Builder
	var args, keys []any
	for _, c := range calls {
		key := c.m.IdempotencyKey
		if !inserted[key] {
			continue
		}
		cctx := c.ctx
		if cctx == nil {
			cctx = ctx
		}
		tc := t.Inject(cctx)
		if tc == "" || len(tc) > maxTraceContext {
			continue
		}
		cases.WriteString(" WHEN ? THEN ?")
		args = append(args, key, tc)
		if len(keys) > 0 {
			in.WriteString(", ")
		}
		in.WriteString("?")
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, o.q(`UPDATE outbox_items SET trace = CASE ikey`+cases.String()+` ELSE trace END WHERE ikey IN (`+in.String()+`)`),
		append(args, keys...)...)
	return err
}

// loadTraces reads the stored trace context of claimed items, in one
// query. It does nothing without a Tracer.
func (o *Outbox) loadTraces(ctx context.Context, ex execer, items []*claimed) error {
	if o.cfg.tracer == nil || len(items) == 0 {
		return nil
	}
	byID := make(map[int64]*claimed, len(items))
	args := make([]any, 0, len(items))
	for _, it := range items {
		byID[it.id] = it
		args = append(args, it.id)
	}
	rows, err := ex.QueryContext(ctx, o.q(`SELECT id, trace FROM outbox_items WHERE id IN (?`+strings.Repeat(", ?", len(items)-1)+`) AND trace <> ''`), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var tc string
		if err := rows.Scan(&id, &tc); err != nil {
			return err
		}
		if it := byID[id]; it != nil {
			it.trace = tc
		}
	}
	return rows.Err()
}

// dispatch returns the context of it's send and the function to call
// with its error, through the Tracer if there is one.
func (o *Outbox) dispatch(ctx context.Context, it *claimed) (context.Context, func(error)) {
	if o.cfg.tracer == nil {
		return ctx, func(error) {}
	}
	return o.cfg.tracer.Dispatch(ctx, it.Item, it.trace)
}
