// Package outbox is a durable send queue for cloudapi: messages are stored
// in a database before anything is sent, dispatched in FIFO lanes per
// (business number, recipient), and every state change is recorded with
// its instant, so that a restart loses nothing and nothing is ever sent
// twice.
//
//	o, err := outbox.Open(ctx, "sqlite:/var/lib/app/outbox.db", outbox.WithClient(client))
//	defer o.Close()
//	t, err := o.Enqueue(ctx, phoneNumberID, cloudapi.Text("+237 690 00 00 01", "Your order shipped"))
//	go o.Run(ctx, client) // or in your own errgroup: Run is the caller's goroutine
//	it, err := o.Get(ctx, t.Key)
//
// The Client owns every limit (pair policy, throughput, store, tier,
// budget: set once, on the Client): the Outbox takes them from the Client
// given to [WithClient], else from the Client of its latest Run, for its
// estimates and for which lanes must wait. Give the Outbox and the Client
// the same clock.
//
// # Storage
//
// One schema and one set of queries over database/sql, two dialects:
// "sqlite:PATH" is the embedded default (modernc.org/sqlite, pure Go, WAL,
// no server; one process at a time), and a "postgres://" URL (pgx v5's
// database/sql driver) lets several workers on several hosts share one
// queue: they claim lane heads with FOR UPDATE SKIP LOCKED under leases,
// and a lane's head in flight blocks the rest of its lane, so a lane is
// sent by one worker at a time and FIFO order holds across workers.
// [OpenDB] takes a *sql.DB the caller owns instead of a DSN.
//
// The schema carries a version ([SchemaVersion]): Open migrates an older
// outbox forward in one transaction, keeping every item, and refuses one
// written by a newer version ([ErrSchemaTooNew]). Counters of the items
// per business number and state are kept by the database's triggers, so
// [Outbox.Snapshot]'s counts, [Outbox.Drain] and the capacity check cost
// the same with a million items queued. Other code that changes items'
// states with its own UPDATEs keeps them right for free, provided it
// leaves the column moves alone: Run's own statements change it to say
// they record their transitions themselves (the triggers skip them).
//
// # Model
//
// Enqueue validates the message (nothing stored for an invalid one),
// gives it its idempotency key (its own or a generated one; an existing
// key stores nothing new) and either stores it as queued or rejects it at
// once: queue or reject. [Outbox.EnqueueTx] does the same inside the
// caller's *sql.Tx, [Outbox.EnqueueMany] for a list in one transaction of
// its own (a result per message), and [Outbox.EnqueueBurst] stores a
// multi-bubble reply as one unit, sent back to back as one burst of the
// pair. [Outbox.Run] dispatches through a *cloudapi.Client:
//
//	queued -> sending -> accepted -> delivered -> read
//	                  \-> submitted_unknown (-> accepted/delivered/read/failed from webhooks)
//	                  \-> failed
//	queued -> expired (its deadline passed: a dead letter, never sent late)
//
// An item claimed by a worker that died mid-request becomes
// submitted_unknown when its lease ends (under a fixed [WithWorkerID]
// too: a restarted process is another incarnation), and is never resent
// automatically: [Outbox.Reconcile] settles it from status webhooks
// (biz_opaque_callback_data carries the key; the wamid is matched too), and
// only a [ResendPolicy] (off by default) may queue it again, recorded as a
// transition with its reason. A [Revalidate] hook runs right before each
// attempt, and [WithServiceWindow] tracks the 24 h customer service window
// from inbound messages fed to Reconcile, failing a free-form message
// outside it (131047) before anything is spent.
//
// Run wakes at the next due instant on the injected clock (a lane held by
// its pair's debt or a 4^X hold, a deadline, a lease), on an enqueue, when
// sends end, and with Postgres on other workers' notifications (LISTEN);
// it keeps no goroutine per item (one per send in flight, at most
// WithConcurrency, plus the Postgres listener), and starts no goroutine
// outside Run: all of them end before Run returns.
//
// # Errors
//
//	var re *outbox.RejectError
//	var ve *cloudapi.ValidationError
//	switch {
//	case errors.As(err, &ve):                     // invalid message: nothing stored
//	case errors.Is(err, outbox.ErrQueueFull):     // capacity: try after re.RetryAfter()
//	case errors.Is(err, outbox.ErrExpired):       // would wait past its deadline
//	case errors.Is(err, outbox.ErrOutsideWindow): // 131047: send a template instead
//	}
//
// A *RejectError embeds a *cloudapi.BackpressureError, so code written for
// cloudapi's backpressure (errors.As(err, &bp), cloudapi.StateOf) handles
// it too.
//
// # Observability
//
// [WithObserver] hears every transition; [Outbox.Snapshot] counts items per
// state, live lanes, the deepest lane, the oldest queued item and dead
// letters; [Outbox.Drain] waits until nothing is queued or sending.
// [Outbox.Get] returns an item with its history.
//
// # Testing
//
// Unit tests run on SQLite files in t.TempDir(); the multi-worker tests
// need a Postgres server named by WAPACE_POSTGRES_URL (they skip without
// it, and fail under WAPACE_REQUIRE_SERVICES=1).
package outbox
