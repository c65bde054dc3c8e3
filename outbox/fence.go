package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/wapace/wapace/internal/writemark"
)

// Fencing a claim's write by its lease.
//
// A worker's claims live as long as their lease: once it has ended,
// another worker may take them over (sweep them, and move their lanes
// on). A worker that was paused (SIGSTOP, a VM migration, a long GC) or
// stalled (its database out of reach, so that it could not renew) past
// its lease must then write nothing it still holds when it resumes: the
// message may have been taken over, and writing it then would send the
// lane out of order, or twice. So Run keeps, for each claim, the lease's
// end as last committed (at the claim, then by each renewal that found
// the claim still its own), and the Client asks (internal/writemark's
// Fence) right before it lets each message's body go, after its checks
// and however long they waited: the body goes only while the lease has
// more than a third of it left. Run renews every third of the lease, so
// a live worker keeps two thirds ahead; a third is left for a renewal
// that comes late, and for the pause that the fence cannot see, between
// its answer and the write itself (nanoseconds in our transport, but a
// paused process can stop anywhere).
//
// The database's check stays the arbiter: with WithWriteMarks, the mark
// commits only under a live lease. The fence is what works without marks
// (the default), and after the mark.

// errFenced is why a claim's request was not written: its lease, as last
// renewed, has less than a third of it left.
var errFenced = errors.New("outbox: run: the claim's lease has less than a third of it left (this worker was paused or could not renew it): its request is not written")

// reasonFenced is the reason recorded for an item whose request the fence
// refused (errFenced), queued again.
const reasonFenced = "not sent: the claim's lease had less than a third of it left (this worker was paused or could not renew it)"

// fenceMargin is how much of a claim's lease must be left for its request
// to be written.
func (o *Outbox) fenceMargin() time.Duration { return o.cfg.lease / 3 }

// fenceFunc is the fence of the send of claimed items all (a burst's, or
// one): it lets a body go while its item's lease has the margin left, and
// notes in wrote when it first did (Unix nanoseconds on the Outbox's
// clock: the request's write, which sizes Run's sends, inflight.go).
func (r *runner) fenceFunc(all []*claimed, wrote *atomic.Int64) writemark.Fence {
	clk, margin := r.o.cfg.clock, r.o.fenceMargin()
	return func(key string) error {
		for _, it := range all {
			k := it.Key
			if it.Resends > 0 {
				k = resendKey(it.Key, it.Resends)
			}
			if k != key {
				continue
			}
			now := clk.Now()
			if end := it.leaseEnd.Load(); nanos(now.Add(margin)) > end {
				return fmt.Errorf("%w (it ended or ends at %v)", errFenced, fromNanos(end).UTC().Format(time.RFC3339Nano))
			}
			wrote.CompareAndSwap(0, nanos(now))
			return nil
		}
		return nil // not one of the items: nothing of ours to fence
	}
}

// withFence is the context of the send of head (and its burst's rest),
// noting its first write in wrote.
func (r *runner) withFence(ctx context.Context, head *claimed, wrote *atomic.Int64) context.Context {
	all := []*claimed{head}
	if len(head.rest) > 0 {
		all = append(all, head.rest...)
	}
	return writemark.WithFence(ctx, r.fenceFunc(all, wrote))
}

// renewed sets the lease's end of the claims in flight that a renewal
// found still this Run's (ids) to end; the others keep theirs, and their
// fence closes once it nears.
func (r *runner) renewed(ids []int64, end int64) {
	found := make(map[int64]bool, len(ids))
	for _, id := range ids {
		found[id] = true
	}
	for _, it := range r.inflight {
		if found[it.id] {
			it.leaseEnd.Store(end)
		}
		for _, b := range it.rest {
			if found[b.id] {
				b.leaseEnd.Store(end)
			}
		}
	}
}

// busy reports whether this Run has a send of it (or of its burst's rest)
// still in flight, whose outcome is not being recorded: the item was
// taken over meanwhile (its lease ended) and queued again. It is not
// claimed again until that send has ended, so that this Run never holds
// two claims of one item (an outcome, a mark or a fence of the first
// would be taken for the second's).
func (r *runner) busy(it *claimed) bool {
	sending := func(key string) bool {
		_, ok := r.inflight[key]
		return ok && !r.ending[key]
	}
	if sending(it.Key) {
		return true
	}
	for _, b := range it.rest {
		if sending(b.Key) {
			return true
		}
	}
	return false
}
