// Package writemark carries, in a send's context, the functions a
// cloudapi.Client calls right before a message's request may first be
// written to Meta. The outbox uses Func to commit a durable "about to
// write" mark first (a claimed item without the mark provably never
// reached Meta, and a worker that recovers it after a crash may queue it
// again instead of leaving its outcome unknown), and Fence so that a
// claim whose lease has run out is not written.
//
// It is internal so that the Client's exported surface does not grow: no
// user needs the hook outside the outbox.
package writemark

import "context"

// Func is called with the idempotency key of the message whose request is
// about to be written (its connection is ready and no byte of its body
// has left). The request is written only if it returns nil, and only
// after it has returned: it must return nil only once its mark is
// durable. An error keeps the request from being written: the message is
// not submitted. It may block (a group commit), and must return when ctx
// ends.
type Func func(ctx context.Context, key string) error

type ctxKey struct{}

// With returns a copy of ctx that carries f.
func With(ctx context.Context, f Func) context.Context {
	return context.WithValue(ctx, ctxKey{}, f)
}

// From returns the Func ctx carries, or nil.
func From(ctx context.Context) Func {
	f, _ := ctx.Value(ctxKey{}).(Func)
	return f
}

// Fence is called with the idempotency key of a message right before its
// request's body is let go to the transport, after Func (if any) and
// after the last check of the message's slot, however long that waited.
// The body is let go only if it returns nil; an error keeps the request
// from being written (the message is not submitted). It must not block:
// the outbox answers it from memory, with whether the claim's lease (as
// last renewed) still has a margin left, so that a worker paused or
// stalled past its lease does not write what another worker may have
// taken over.
type Fence func(key string) error

type fenceKey struct{}

// WithFence returns a copy of ctx that carries f.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceFrom returns the Fence ctx carries, or nil.
func FenceFrom(ctx context.Context) Fence {
	f, _ := ctx.Value(fenceKey{}).(Fence)
	return f
}
