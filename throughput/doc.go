// Package throughput admits sends within the limits that apply to a whole
// business phone number, business portfolio or app, each as its own
// admission check:
//
//   - [Limiter]: a phone number's message throughput (error 130429), per
//     registered business phone number: 80 messages/s by default ([Default]),
//     up to 1,000 after Meta's automatic upgrade ([Upgraded]), a fixed 20 for
//     numbers in coexistence with the WhatsApp Business app ([Coexistence]).
//     Meta counts inbound and outbound messages alike, so [WithHeadroom]
//     keeps a share free. During an upgrade the number answers 131057 for up
//     to about a minute.
//   - [Tier]: the messaging tier, the unique WhatsApp users a business
//     portfolio may reach outside a customer service window in a moving 24 h:
//     250, 2,000, 10,000, 100,000 or unlimited. Since October 2025 it is
//     per business portfolio, shared by all its numbers. Meta documents no
//     dedicated error code for it.
//   - [Budget]: the API call budget per app per WhatsApp Business Account
//     for the management endpoints (the WABA, its phone numbers and
//     templates; not /messages), errors 4, 613, 80007 and 80008: 200 calls
//     an hour by default, 5,000 for a WABA with a registered number, with
//     Meta's own view of the usage in the X-Business-Use-Case-Usage header
//     ([usage.Parse]; only entries of type [usage.TypeManagement], and of the
//     Budget's WABA with [WithBusinessID], count). Only a refusal
//     ([Budget.RefusedUntil]) holds message sends.
//
// (Sources: Meta's Throughput, Messaging limits and Rate limits pages.)
// None of these is the pair rate limit: an account-wide limiter at 1 message
// per 6 s would cap a number at 10 messages a minute; see package
// [github.com/wapace/wapace/pairlimit] for that.
//
// # Model
//
// Limiter and Budget are token buckets, kept as a generic cell rate
// algorithm ([throughputstore.BucketState]: one instant per bucket) and decided in one
// critical section per call, so that instants asked in any order and from
// any number of goroutines never admit more than the rate. Burst and rate
// are chosen so that no window of the limit's length ever admits more than
// the limit: a bucket whose burst equals its rate admits almost twice the
// rate within one second. Limiter uses a burst of 1 % (at least one) and a rate of the rest
// of the per-second figure, so the sustained rate is 98.75 % of it at 80,
// 99 % at 1,000 (98.5 % with the 5 ms margin a Limiter starts with above
// 100 msg/s, see below), and at least 95 % for any figure of 20 and up.
//
// After Meta refuses a send for the whole number, the Limiter holds only
// that number, for the schedule the caller gives it: errcodes is the one
// table from a Meta code to a hold and its wait (errcodes.Class Wait,
// MaxWait), and the Limiter never reads a code. [Limiter.Throttled] takes
// a throughput refusal (130429: errcodes gives 1 s, doubling up to 30 s):
// refusals that arrive together (during the hold or within a second after
// it) are one event, the hold doubles only for events not separated by an
// acceptance, and the rate stays unless events keep coming (one within 10 s
// of the previous), when (unless [WithAdaptiveRate](false)) it is cut to
// 3/4, recovering a tenth of it every 10 s. [Limiter.Hold] takes a
// condition such as maintenance (131057: polled after 10 s, 20 s, 40 s,
// then every minute; 2494100: 2 min). [Budget.Hold] does the same for the
// call budget (4, 613, 80007, 80008: 1 min, doubling up to an hour).
//
// # Write-time pacing
//
// A Limiter decides when a send may leave; Meta counts it when it arrives.
// A sender reports each send's lateness with [Limiter.ObserveSend]: how
// long after its slot it was checked just before writing, and how long
// the write then took. A send later than [Limiter.Tolerance] gives its
// slot back and takes a new one; [Limiter.Margin] stretches the bucket's
// second so that sends whose lateness differs by up to the margin plus one
// interval still fit one second at Meta. Both follow recent lateness (per
// Limiter, in memory): the tolerance is at least half an interval and at
// least 5 ms (Go's timers wake a sender up to a millisecond late), so on
// an idle machine the margin is 0 at up to 100 msg/s and about 5 ms above;
// under load both grow. Limiters sharing a [throughputstore.Store] each stretch their own slots by their
// margin divided by their share of the number's slots, so that together
// they stay under the figure whatever each one's lateness. A write later
// than the margin covers pauses the number for the excess and moves the
// slots not yet handed out later by as much, so that the sends after it
// shift instead of bunching with it. The tolerance is never below the
// median of the recent checks' lateness (the margin then covers it, beyond
// 250 ms if need be), so that a sender whose checks are all late still
// sends, at a lower rate. The cloudapi Client
// does all this for every message; [WithHeadroom] fixes the margin
// instead.
// [Limiter.SetMPSAt] applies a new figure after an upgrade (the cloudapi
// Client's limiters also move the sends already waiting to the new
// figure's pace).
//
// A [Tier] counts a recipient (a phone number or a business-scoped user
// ID; the two are different recipients) from its latest admitted send for
// 24 hours. [Tier.Claim] admits and returns a [Claim] whose Release gives
// the count back when the message never went out. A limit of 0 admits no
// new recipient and answers a retry 24 hours on; a negative limit is
// [Unlimited]; [Tier.SetLimit] follows Meta's tier changes.
//
// Reservations give back exactly what they took ([Reservation.CancelAt]):
// the latest reservation, or each in the reverse order of reserving.
//
// # Shared state
//
// By default each Limiter, Budget and Tier keeps its state in memory. With
// [WithStore] it keeps it in a [throughputstore.Store] under a key, so that the limits of
// one number, app or portfolio hold across processes: each decision is one
// store call (one Lua script on Redis), on the instant and figures the
// caller passes, and the rules a store implements are the pure methods of
// [throughputstore.BucketState] and [throughputstore.TierState]. [throughputstore.NewMemoryStore] makes the reference store. A
// decision the store cannot make is not OK, with an error matching
// [ErrStore]: nothing was reserved, so nothing may be sent.
//
// # Zero values
//
// The zero Limiter admits [Default] messages per second, the zero Budget
// 200 calls per hour, both on the real clock; the zero Tier is a
// tier of 0; the zero Reservation and Claim are not OK. No method panics on
// them.
//
// # Time
//
// Every decision has an explicit-time form; the short forms and WaitN use
// the clock given with [WithClock] (real by default), in a select with the
// context, so they run under testing/synctest and with a clock.Mock. No
// goroutine is started.
//
// # Errors
//
// One error model: sentinels matched with errors.Is, no typed error.
// Whatever fails reserved nothing.
//
//	error                returned by                          means
//	ErrInvalidOption     every decision, SetMPSAt, Claim.Err  an option or figure the limit cannot honour: it admits nothing
//	ErrInvalidCount      ReserveN, WaitN                      n below 1
//	ErrBurstTooLarge     ReserveN, WaitN                      n above the burst: never admitted together
//	backoff.ErrDeadline  WaitN, Budget.WaitN                  the wait would end after ctx's deadline
//	ErrStore             every decision, Claim.Err            the Store failed (unwraps to its error): do not send
//	usage.ErrMalformed   usage.Parse                          a malformed usage header
//	ctx.Err()            WaitN                                cancelled while waiting; given back
//
// Options are validated, never clamped or ignored: WithHeadroom outside
// [0, 0.9], WithStore with a store and no key, more than 10,000 messages a
// second (New, SetMPSAt), more than 2^31-1 calls an hour (NewBudget), and
// an option of another constructor (WithHeadroom and WithAdaptiveRate are
// New's, WithBusinessID NewBudget's) make the limit's decisions fail with
// an error naming the option and the value. Its holds (Throttled, Hold,
// Observe) then hold nothing and return 0, and Tier.Count is 0. A
// ReserveN of 0 messages reports the configuration's error without
// spending anything.
//
// [backoff.ErrDeadline] is the module's one "cannot fit before your
// deadline" error (pairlimit and backoff return it too):
//
//	if err := lim.Wait(ctx); errors.Is(err, backoff.ErrDeadline) { ... }
package throughput
