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
//     (errors 4, 80007 and 80008): 200 calls an hour by default, 5,000 for a
//     WABA with a registered number, with Meta's own view of the usage in the
//     X-Business-Use-Case-Usage header ([ParseUsage]).
//
// (Sources: Meta's Throughput, Messaging limits and Rate limits pages.)
// None of these is the pair rate limit: an account-wide limiter at 1 message
// per 6 s would cap a number at 10 messages a minute; see package
// [github.com/wapace/wapace/pairlimit] for that.
//
// # Model
//
// Limiter and Budget are token buckets ([golang.org/x/time/rate], used only
// through its explicit-time methods) whose burst and rate are chosen so that
// no window of the limit's length ever admits more than the limit: a bucket
// whose burst equals its rate admits almost twice the rate within one
// second. Limiter uses a burst of 1 % (at least one) and a rate of the rest
// of the per-second figure, so the sustained rate is 98.75 % of it at 80,
// 99 % at 1,000, and at least 95 % for any figure of 20 and up.
//
// After Meta refuses a send for the whole number, [Limiter.Refused] holds
// only that number: after 130429 for 1 s, doubling with consecutive
// refusals up to 30 s, and (unless [WithAdaptiveRate](false)) cuts the rate
// to 3/4, recovering a tenth of it every 10 s; after 131057 or 2494100
// (maintenance) it polls every 10 s, 20 s, 40 s, then every minute.
// [Limiter.SetMPSAt] applies a new figure after an upgrade.
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
// WaitN fails at once, reserving nothing, with [ErrBurstTooLarge] or with
// [ErrDeadline] when the wait cannot end before the context's deadline:
//
//	if err := lim.Wait(ctx); errors.Is(err, throughput.ErrDeadline) { ... }
//
// [ParseUsage] errors match [ErrBadUsage].
package throughput
