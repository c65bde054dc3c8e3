package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/cloudapi"
)

// Defaults of an Outbox.
const (
	// DefaultCapacity bounds the live (queued or sending) items.
	DefaultCapacity = 1_000_000
	// DefaultLaneCapacity bounds the live items of one lane (one
	// business number and one recipient).
	DefaultLaneCapacity = 1_000
	// DefaultConcurrency caps the sends Run has in flight at once (each is
	// one lane's head); Run keeps fewer, what its numbers need (see
	// WithConcurrency). 1,024 keeps one number upgraded to 1,000 msg/s
	// busy at round trips to Meta of up to about 600 ms, or five at up to
	// about 60 ms (a fake on the same machine, not Meta).
	DefaultConcurrency = 1024
	// DefaultLease is how long a claim lives without renewal: a worker
	// renews its claims every third of it, and the claims of a worker that
	// stopped renewing become submitted_unknown once it ends.
	DefaultLease = 30 * time.Second
	// DefaultStopGrace is how long Run lets requests in flight finish after
	// its context ends before cancelling them (which can leave their
	// outcome unknown).
	DefaultStopGrace = 5 * time.Second
	// DefaultServiceWindow is Meta's customer service window: free-form
	// messages may be sent within 24 hours of the user's last message.
	DefaultServiceWindow = 24 * time.Hour
)

// Option configures an Outbox. Options are validated by Open.
type Option func(*config) error

// ResendPolicy says whether an item left submitted_unknown may be sent
// again. The zero value never resends (the default): an unknown outcome
// is reconciled from status webhooks only.
type ResendPolicy struct {
	// After is how long an item must stay submitted_unknown without any
	// status webhook before it may be queued again. Zero disables resends.
	After time.Duration
	// Max is the most resends of one item (at least 1 when After is set).
	Max int
}

// Revalidate is called by Run right before each attempt with the item
// about to be sent. Returning nil sends it; returning an error drops it
// without sending: it becomes expired if the error matches ErrExpired,
// failed otherwise, with the error's text as the reason. Use it to check
// consent, that a template is still approved, or business state.
type Revalidate func(ctx context.Context, it Item) error

// Event is one recorded transition, for an observer.
type Event struct {
	// At is the instant on the Outbox's clock.
	At time.Time
	// Key is the item's idempotency key.
	Key string
	// State is the state entered.
	State State
	// Reason says why (for dead letters, unknown outcomes, resends).
	Reason string
}

type config struct {
	clock        clock.Clock
	capacity     int
	laneCapacity int
	concurrency  int
	lease        time.Duration
	idleWake     time.Duration
	idleWakeSet  bool
	stopGrace    time.Duration
	client       *cloudapi.Client // WithClient, or nil
	resend       ResendPolicy
	revalidate   Revalidate
	window       time.Duration
	observer     func(Event)
	runErrors    func(error, time.Duration)
	log          *slog.Logger
	tracer       Tracer // WithTracer, or nil
	newKey       func() string
	owner        string
	ownerFixed   bool // WithWorkerID: the name is held in outbox_workers
	marks        bool // WithWriteMarks (mark.go)
}

func defaultConfig() config {
	return config{
		clock: clock.New(), capacity: DefaultCapacity, laneCapacity: DefaultLaneCapacity,
		concurrency: DefaultConcurrency, lease: DefaultLease, stopGrace: DefaultStopGrace,
		newKey: orderedKey,
	}
}

func optErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
}

// WithClock reads time from and waits on clk (the real clock by default).
// Give the cloudapi.Client passed to Run the same clock.
func WithClock(clk clock.Clock) Option {
	return func(c *config) error {
		if clk == nil {
			return optErr("nil clock")
		}
		c.clock = clk
		return nil
	}
}

// WithCapacity bounds the live items of the whole queue (default
// DefaultCapacity); Enqueue rejects beyond it with ErrQueueFull. The
// bound is approximate: an Outbox rereads its counters at most every 100 ms
// and adds its own enqueues meanwhile, so items finished since still
// count (a full queue may reject for up to 100 ms after it drained), and
// with several Outboxes on one Postgres each learns of the others' items
// only at its recount: in a burst the queue may then hold up to one
// capacity per Outbox. WithLaneCapacity, by contrast, is exact.
func WithCapacity(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return optErr("capacity must be at least 1")
		}
		c.capacity = n
		return nil
	}
}

// WithLaneCapacity bounds the live items of one lane (default
// DefaultLaneCapacity); Enqueue rejects beyond it with ErrQueueFull.
func WithLaneCapacity(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return optErr("lane capacity must be at least 1")
		}
		c.laneCapacity = n
		return nil
	}
}

// WithConcurrency caps the sends Run has in flight (default
// DefaultConcurrency). A lane held by a limit holds no send: Run waits for
// it on the clock.
//
// Below the cap, Run keeps in flight what its numbers need, by Little's
// law: for each number with live items, its throughput figure (as the
// Client has it: Client.Number's PerSecond) times how long a send holds
// its place besides waiting for the number's slot (from its request's
// write to the commit recording its outcome: Meta's round trip, the wait
// for its batch, the transaction; measured), with headroom: about
// 1,000 x (1.5 x 0.25 s + 0.03 s) = 405 sends for a number upgraded to
// 1,000 msg/s whose requests take 200 ms, about 34 for one at the default
// 80 msg/s. More would only wait for the numbers' slots. Run records the
// outcomes (and claims as many items again, in one transaction) when half
// of what it keeps in flight has ended, or 50 ms after the first, so a
// small sender keeps small transactions and prompt records. When the
// numbers together need more than the cap, each gets its share in
// proportion and they go slower than their figures.
//
// The cap bounds what a crash can leave unknown: each send in flight when
// the process dies leaves its item submitted_unknown (never resent,
// settled by a status webhook, a ResendPolicy or an operator), even one
// whose request never left because it was still waiting for its slot;
// WithWriteMarks queues those again instead. Lower the cap if an unknown
// outcome costs more than sending below your numbers' figures; raise it
// for many upgraded numbers with slow round trips (five at 1,000 msg/s and
// 300 ms need about 2,800).
func WithConcurrency(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 10_000 {
			return optErr("concurrency must be between 1 and 10000")
		}
		c.concurrency = n
		return nil
	}
}

// WithLease sets how long a claim lives without renewal (default
// DefaultLease). After a worker dies, its claims become submitted_unknown
// once their lease ends (or, with WithWriteMarks, queued again if their
// requests provably never left), and another worker moves their lanes on.
//
// Run renews its claims every third of the lease, and a claim's request
// is written only while its lease, as last renewed, has more than a
// third left (the fence): a worker paused (a stopped process, a VM
// migration) or stalled (a database it cannot reach) until then writes
// nothing it held when it goes on, so that a lane another worker took
// over is not sent out of order, or twice. What no worker can fence is a
// pause longer than a third of the lease that falls between the fence's
// last look and the write itself (or inside a transport given with
// cloudapi.WithHTTPClient that holds a body it has read): choose a lease
// that such pauses do not reach. The workers' clocks must agree to well
// within a third of the lease.
func WithLease(d time.Duration) Option {
	return func(c *config) error {
		if d < 10*time.Millisecond {
			return optErr("lease must be at least 10ms")
		}
		c.lease = d
		return nil
	}
}

// WithIdleWake makes Run look for work it was not told about (items
// enqueued by another process, or in a transaction committed after
// EnqueueTx without Wake) at least every d on the Outbox's clock. Run
// otherwise wakes only at due instants, on this Outbox's own enqueues and,
// with Postgres, on the notifications of other workers (LISTEN: an item
// inserted, a send finished). The default is 1 s for Postgres (a safety
// net for lost notifications) and 0 (never) for SQLite.
func WithIdleWake(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return optErr("idle wake must not be negative")
		}
		c.idleWake, c.idleWakeSet = d, true
		return nil
	}
}

// WithStopGrace sets how long requests in flight may finish after Run's
// context ends (default DefaultStopGrace).
func WithStopGrace(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return optErr("stop grace must not be negative")
		}
		c.stopGrace = d
		return nil
	}
}

// WithClient gives the Outbox, from Open on, the cloudapi.Client that
// sends its items: the owner of every limit. Enqueue then estimates each
// item's send instant, and refuses what cannot meet its deadline or a
// burst longer than the pair's, with this Client's pair policy and its
// numbers' current throughput (cloudapi.WithPairLimiter, WithThroughput,
// WithNumberThroughput: the limits are set once, on the Client), and Run
// must be given the same Client (another one fails with
// ErrInvalidOption).
//
// Without it, the Outbox takes the Client of each Run: Enqueue calls made
// before the first Run estimate with Meta's defaults (pairlimit.Meta and
// throughput.Default), later ones with the latest Run's Client. Give the
// Client at Open when items are enqueued before Run starts (a process that
// only enqueues, or a campaign loaded first) and its limits differ from
// the defaults.
//
// Either way, the first Run with a Client replays the recent sends recorded
// in the database into that Client's pair limiter (no 131056 after a
// restart), once per pair limiter, and a lane whose pair is in debt or
// held waits on the clock without holding one of WithConcurrency's sends.
func WithClient(c *cloudapi.Client) Option {
	return func(cfg *config) error {
		if c == nil {
			return optErr("nil client")
		}
		cfg.client = c
		return nil
	}
}

// WithResend sets the policy for items left submitted_unknown (default:
// never resend). Each resend is recorded as a transition with its reason
// and counted in Item.Resends; its request carries the key with a "#rN"
// suffix (N the resend's number) as idempotency key and
// biz_opaque_callback_data, so that the Client does not refuse it as a
// duplicate and status webhooks name the attempt (Reconcile maps it back).
// A resent item keeps its place in its lane (its original enqueue
// order): once its resend is due it is the lane's next send, after the
// one in flight if any, ahead of every item enqueued after it. The user may
// then receive the message twice: that is the policy's risk.
func WithResend(p ResendPolicy) Option {
	return func(c *config) error {
		if p.After < 0 || p.Max < 0 || (p.After > 0 && p.Max < 1) {
			return optErr("resend policy needs After >= 0 and, with After, Max >= 1")
		}
		c.resend = p
		return nil
	}
}

// WithRevalidate calls f right before each attempt.
func WithRevalidate(f Revalidate) Option {
	return func(c *config) error {
		c.revalidate = f
		return nil
	}
}

// WithServiceWindow enables the customer service window tracker: free-form
// (non-template) messages are rejected at Enqueue, and failed with 131047
// at dispatch, unless the user's last inbound message (fed through
// Reconcile) is less than d old. Use DefaultServiceWindow.
func WithServiceWindow(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return optErr("service window must be positive")
		}
		c.window = d
		return nil
	}
}

// WithObserver calls f after every recorded transition. f must not block.
func WithObserver(f func(Event)) Option {
	return func(c *config) error {
		c.observer = f
		return nil
	}
}

// WithIdempotencyKeys generates the keys of messages that have none with f
// (default: 16 bytes in hex, 8 of them increasing with the time of
// generation and 8 random; see orderedKey). Keys that grow with time are
// stored at the end of the outbox's key index: random ones land on a
// random page of it each, which costs a page read and write per message
// once the queue is large.
func WithIdempotencyKeys(f func() string) Option {
	return func(c *config) error {
		if f == nil {
			return optErr("nil key generator")
		}
		c.newKey = f
		return nil
	}
}

// WithWorkerID names this process's claims (default: random), for a
// supervisor or a StatefulSet that restarts a process under the same
// name. Names must be unique among live workers: a Run whose name another
// live process holds returns ErrWorkerIDInUse (it waits up to one lease
// to tell a live holder from a dead one). The claims of a process that
// died under the name are recovered after their lease, like any dead
// worker's, by the restarted process or any other.
func WithWorkerID(id string) Option {
	return func(c *config) error {
		if id == "" || len(id) > 128 || strings.ContainsAny(id, "\x00\n") {
			return optErr("worker ID must be 1 to 128 bytes without NUL or newline")
		}
		c.owner, c.ownerFixed = id, true
		return nil
	}
}
