// Package redisstore keeps wapace's limits in Redis, so that senders in
// several processes (replicas of a bot behind a load balancer, campaign
// workers, an agent console on the same number) pace as one: per-pair debt
// and 131056 holds ([github.com/wapace/wapace/pairlimit]), each business
// number's throughput bucket and holds, the app's call budget and the
// portfolio's messaging tier ([github.com/wapace/wapace/throughput]).
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	st := redisstore.New(rdb, redisstore.WithPrefix("myapp:"))
//	pairs := pairlimit.New(pairlimit.Meta, pairlimit.WithStore(st))
//	number := throughput.New(80, throughput.WithStore(st.Throughput(), "106540352242922"))
//
// or, for a whole client, cloudapi.WithStore(st).
//
// # Model
//
// A Store keeps state only. Each decision is one Lua script that applies
// exactly the pure rule its interface names ([pairstore.State],
// [throughputstore.BucketState], [throughputstore.TierState]) on the instant and the
// figures the caller passes: one round trip, atomic, run by its SHA1
// (EVALSHA, falling back to EVAL when the server lost the script, as
// go-redis's Script does). Give-back is exact under concurrency: a ticket
// is given back only while no later reservation stands on it, checked in
// the same script that restores the state. A pair's reservation IDs are the
// caller's instant in microseconds, or one more than the highest ID the key
// handed out (from 1 again where that would reach 2^53, after 2255), and a
// give-back also checks that the pair still owes what
// the ticket left it (pairstore.Ticket.End), so a stale ticket never undoes
// a later reservation. A pair's reservation answers with the state it
// found (Redis sends a string it already holds), alone when it reserved
// and in an array of one when it refused, so that the decision is always
// the script's; the Go side derives the ticket from that state by the
// script's own arithmetic, which is [pairstore.State.Reserve] exactly
// while debts and instants lie within 104 days of each other. A Due
// saturates at the largest instant, as State.Reserve's does.
//
// Instants are the caller's (explicit time, so that the same code runs
// under simulated time). Lua numbers are doubles, exact to 2^53: a state
// keeps its instants as nanosecond offsets from a base instant stored with
// it, moved forward after a day of use, and the Go side adds base and
// offset exactly.
//
// # Keys
//
// Keys expire by themselves at an absolute instant (SET ... PXAT for a
// pair, PEXPIREAT for buckets and tiers) once the state they hold may be
// forgotten: a pair's when its debt is repaid (or its 131056 count is 15
// minutes past its hold), a bucket's when it is full again and its hold is
// over, a tier's when its newest count leaves the window; each plus
// [SkewAllowance]. When the caller's instant is within an hour of the
// host's clock, the expiry instant is the state's own; far from it
// (simulated time) the key lives that long from Redis's now.
//
//	prefix{N}:p:R     string: pair of business number N and recipient R
//	prefix{K}:b       hash: bucket K (a number's ID, or a budget's name)
//	prefix{K}:m       string: the epoch marker of K's slot (no expiry; see below)
//	prefix{t:T}:z     sorted set: tier T's recipients, and prefix{t:T}:e its epoch
//
// Every key of one business number carries the number as a hash tag, so in
// Redis Cluster a number's pairs and bucket share one slot, and every
// script touches one slot.
//
// Processes of two versions of this package may share one Redis during a
// rolling upgrade: each runs its own scripts (by their SHA1) on the same
// keys, so a key's format only changes with a new key name. The formats
// above are those every version so far reads and writes.
//
// Redis 6.2 or later is needed (SET ... PXAT); Valkey and other forks
// that run Lua scripts work alike.
//
// # Losing Redis's state
//
// Redis forgets the debts it holds when it is flushed (FLUSHALL), restarts
// without persistence, or fails over to a replica that had not received
// them; without more, every sender would then write at once to pairs that
// still owe, and Meta would answer 131056. Configure Redis so that it does
// not happen: persistence (appendonly yes with appendfsync everysec or
// always; RDB snapshots alone lose the writes since the last one), a
// failover that promotes only a replica in sync (min-replicas-to-write 1
// with a small min-replicas-max-lag), and a maxmemory-policy that never
// evicts keys without an expiry (noeviction or volatile-*).
//
// When that is not met, the Store limits the damage, inside each
// decision's one round trip:
//
//   - A process never undercuts a debt it created: each Store keeps a
//     bounded shadow of the Due its own reservations left (about a million
//     pairs; expired ones go first) and its reservations take it as a
//     floor, writing the debt back to Redis.
//   - Every business number has an epoch marker (prefix{N}:m). Each Store
//     sends the marker it last saw with each reservation; a script that
//     finds it gone or changed (it reads it when Redis holds no state for
//     the pair or bucket at hand, where a loss shows first) writes a new
//     one marked lost. From then on,
//     until [WithLostStateDebt] (by default [DefaultLostStateDebt], Meta's
//     full burst of 45, 270.25 s) has passed since the new marker was
//     written, every Store treats a pair Redis holds no state for as owing
//     until then, and a throughput bucket Redis lost as spent at that
//     instant, so that a second's count is not doubled. Each Store reports
//     the loss once, to [WithObserver] and [WithLogger] ([StateLoss]).
//
// What remains: a process that never decided for a number before the loss
// cannot notice it, and decides as on a first use until another process
// marks the marker; a failover to a replica that lags (rather than one
// that is empty) keeps the marker and loses only the latest writes, which
// nothing detects; the tiers' counts of recipients are not restored.
//
// # Clock skew
//
// Decisions use the caller's clock, and the state records instants of
// several hosts' clocks. A host whose clock is s ahead of another's sees the
// other's debt end s early, and may send s too early for a recipient the
// other just wrote to: Meta would see the two messages closer than the
// limiter intended. The pair margin ([pairlimit.DefaultMargin], 250 ms,
// [pairlimit.WithMargin]) absorbs that, together with network jitter, as
// long as skew plus jitter stays below it. Bound the skew by running NTP
// (chrony keeps hosts within a few milliseconds), and raise the margin if
// it cannot be bounded that tightly. Expiry uses Redis's clock with
// [SkewAllowance] to spare, so a host whose clock runs behind Redis's by
// less than that never finds a pair forgotten early.
//
// # Errors
//
// A decision that cannot reach Redis (connection refused, a timeout, the
// context ending) fails closed: nothing is reserved and the message must
// not be sent. The limiters report it as not OK with an error matching
// pairlimit.ErrStore or throughput.ErrStore that wraps an
// [*UnavailableError] (matching [ErrUnavailable]); cloudapi returns it with
// the state "not submitted", so the message can be sent again later:
//
//	var ue *redisstore.UnavailableError
//	if errors.As(err, &ue) { /* Redis is down: retry later */ }
//
// Decisions are bounded by the caller's context, by the client's
// ReadTimeout and WriteTimeout, and by [WithTimeout]. With
// [WithLocalFallback] the pair decisions fall back to this process's memory
// instead, at the documented risk of 131056 during the outage.
//
// # Testing
//
// The pairlimit/pairlimittest and throughput/throughputtest conformance
// kits run against this package on a real Redis (WAPACE_REDIS_URL, or a
// redis-server found on PATH).
package redisstore
