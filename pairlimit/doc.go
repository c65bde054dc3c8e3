// Package pairlimit paces sends per (business number, recipient) pair so
// that Meta's pair rate limit, error 131056, never fires from wapace's own
// traffic, and holds only the failing pair when it fires anyway.
//
// Meta's rule: a business phone number may send 1 message every 6 s to the
// same WhatsApp user, and a burst of up to 45 in 6 s is accepted, but the
// burst borrows from future quota: after a burst of n, that pair must stay
// silent until n x 6 s have passed since the burst began (a burst of 20
// means about 2 minutes). The 131056 then hits the next, innocent message,
// minutes after the burst that caused it. A plain token bucket of 45 gets
// this wrong: it would keep sending right after a burst of 20. Other
// recipients are never affected, so an account-wide limiter at the pair rate
// (0.17/s) would cap a whole number at 10 messages a minute.
//
// # Model
//
// Per pair, the state is due (when the debt is repaid), burstStart, burstLen.
// A send at t:
//
//   - if t >= due: accepted; a new burst begins: burstStart = t, burstLen = 1,
//     due = t + Interval;
//   - else if t < burstStart + BurstWindow and burstLen < Burst: accepted,
//     joins the burst: burstLen++, due += Interval;
//   - else: refused (that is a 131056). A refused send changes nothing.
//
// [Policy]{Interval: 6 s, Burst: 45, BurstWindow: 6 s} is Meta's documented
// rule ([Meta]). [Replay] runs a log of sends through exactly this model.
//
// # Pacing
//
// A [Limiter] schedules sends so that the model never refuses them. Each
// reservation of n messages sent together (n > 1 is a multi-bubble reply)
// starts a burst when the pair's debt is repaid, and leaves the pair owing
// n x Interval plus a safety margin. A burst is never joined after the fact:
// messages go together only when asked for together, because the debt of an
// accidental burst lands on a later message. A lone sender is therefore
// spaced exactly Interval + margin apart.
//
// The margin ([DefaultMargin], 250 ms; see [WithMargin]) absorbs network
// jitter: Meta sees when requests arrive, not when they leave, and two
// requests that arrive closer than they were sent would join one burst at
// Meta and owe more than the limiter thinks. A burst cap ([WithBurstCap])
// lowers the largest n a reservation may hold.
//
// [Limiter.ReadyAt] tells when a pair could take n messages without
// reserving anything, in the manner of rate.Limiter.TokensAt, so that a
// caller weighing several limits never leaves a probe's debt behind.
// [Reservation.CancelAt] gives back exactly what a reservation took: the
// latest one, or each in the reverse order of reserving, never below a
// 131056 hold applied since; a second cancel is harmless.
//
// A recipient is a phone number or a business-scoped user ID (BSUID,
// "CO.1949266959121697"), the identifier Meta gives users who adopted a
// username. A BSUID pair is paced exactly like a phone pair; a phone number
// and a BSUID are different pairs even for one user. BSUIDs too long to be
// held in an integer are keyed on a fixed 61-bit hash; two of them sharing a
// key (about n^2/2^62 among n) share one pair's pacing, which only makes
// sends later (see [Pair]).
//
// When Meta answers 131056 anyway (another process sends on the same number,
// or a clock drifted), [Limiter.Refused] holds that pair for Meta's 4^X
// seconds ([backoff.Meta]), X counting its consecutive refusals;
// [Limiter.Accepted] resets the count. Other pairs are untouched.
//
// # Stores
//
// The decision is a pure function of one pair's small [pairstore.State], the instant
// and the policy's figures. A [pairstore.Store] keeps the states and applies one rule
// per call (one Lua script on Redis), so that several limiters, in one
// process or many, pace the same pairs as one ([WithStore]). The default
// is a memory store ([NewMemoryStore]) of the limiter's own: 1,024 shards of pointer-free
// open-addressing tables, which spend memory only on pairs that still owe
// or carry a recent 131056, whatever the pattern of calls: expired states
// are swept a few slots per call, and judged against the earliest of the
// latest instant asked, the clock, and the clock moved back by how far
// behind it recent calls asked, so a reservation asked at a future
// instant never makes another pair's debt look repaid. Pass [WithClock]
// when the instants you pass are not the real time. A decision the store
// cannot make is a Reservation that is not OK with an error matching
// [ErrStore]: nothing was reserved, nothing may be sent.
//
// The zero Limiter is ready to use, as New(Meta) with its own memory
// store; the zero Reservation is not OK and cancelling it does nothing.
//
// # Time
//
// Every decision has an explicit-time form (AllowN(t, ...), ReserveN(t, ...),
// CancelAt(t)); the short forms read the limiter's clock
// ([github.com/benbjohnson/clock], real by default, set with [WithClock]).
// [Limiter.WaitN] waits on that clock in a select with the context, so it
// runs under testing/synctest and with a clock.Mock alike. No goroutine is
// started: stale pairs are evicted lazily inside the calls.
//
// # Errors
//
// One error model: sentinels matched with errors.Is, and one typed error
// matched with errors.As for its data. Whatever fails reserved nothing.
//
//	error                        returned by                 means
//	*NumberError (errors.As)     NewPair, NormalizeRecipient not a phone number or a BSUID (Field, Reason)
//	ErrInvalidOption             every decision              an option the Limiter cannot honour: it reserves nothing, ever
//	ErrZeroPair                  every decision              the zero Pair: build pairs with NewPair
//	ErrInvalidCount              ReserveN, WaitN, ReadyAt    n below 1
//	ErrBurstTooLarge             ReserveN, WaitN, ReadyAt    n above the burst cap: never sendable together
//	backoff.ErrDeadline          WaitN                       the wait would end after ctx's deadline
//	ErrStore                     every decision              the Store failed (unwraps to its error): do not send
//	ctx.Err()                    WaitN                       cancelled while waiting; given back
//
// A [*NumberError]'s message never repeats the number, nor does
// [Pair.String]. An invalid option (WithMargin below 0, WithBurstCap
// outside 1 to the policy's Burst) is neither clamped nor ignored: the
// Limiter's first decision reports it, naming the option and the value
// (ReadyAt asks without reserving). Every BSUID of
// Meta's grammar is accepted. [backoff.ErrDeadline] is the module's one
// "cannot fit before your deadline" error (throughput and backoff return
// it too):
//
//	if err := lim.WaitN(ctx, pair, 3); errors.Is(err, backoff.ErrDeadline) {
//		// too late for this reply: nothing was reserved
//	}
//
// # Forensics
//
// Log the instant of every send per pair. When a 131056 arrives, [Replay]
// the pair's log: the refused send's [Verdict] names the burst that spent the
// quota (its start and length) and the debt still owed at that moment.
package pairlimit
