// Package backoff provides retry schedules, Meta's 4^X above all, and a
// retry helper that waits on an injected clock.
//
// After a pair rate limit (error 131056) Meta prescribes: retry after 4^X
// seconds, X starting at 0 and rising by one after each failure. That is
// [Meta]: 1 s, 4 s, 16 s, 64 s, 256 s. By the fourth failure it has waited
// 85 s where the usual doubling schedule (an [Exponential] capped at a
// minute) has waited 15 s: the
// doubling retries spend their attempts inside the debt they are meant to
// wait out, and each is another refused request.
//
// # Model
//
// A [Schedule] maps a retry number to a wait and is pure. [Retry] runs an
// operation, asks a policy whether its error is worth retrying (by default
// one that follows [errcodes]; see [WithRetryIf]), and waits between
// attempts on a
// [clock.Clock] (github.com/benbjohnson/clock; the real clock by default),
// never with time.Sleep. A server's hint beats the schedule: an error that
// has a RetryAfter() time.Duration method (see [RetryAfter]) sets the next
// wait, and the
// hold errcodes gives a code after that many refusals
// ([errcodes.Class].HoldAfter) raises it.
//
// A deadline (a message's freshness, or the context's) is checked before
// each wait: when the wait would end after it, Retry gives up at once rather
// than sleeping until the deadline and failing then.
//
// # Errors
//
// Retry's error says why it stopped, matched with errors.Is, and wraps the
// last error from op, so that both are matchable:
//
//	error                  means
//	ErrDeadline            the next wait would end after the deadline (also
//	                       returned by the waits of pairlimit and throughput)
//	ErrMaxAttempts         op failed as often as WithMaxAttempts allows
//	ctx.Err()              the caller gave up
//	(op's own error)       op said not to retry (Permanent), or the policy
//	                       (WithRetryIf) said so: returned as is
//
// Its message says after how many attempts it stopped.
//
//	err := backoff.Retry(ctx, backoff.Meta, send)
//	switch {
//	case errors.Is(err, backoff.ErrDeadline):    // would not fit before the deadline
//	case errors.Is(err, backoff.ErrMaxAttempts): // out of attempts
//	case errors.Is(err, context.Canceled):       // the caller gave up
//	}
//	if errors.Is(err, errcodes.PairRateLimit) { ... } // the last error was a 131056
//
// [Permanent] stops at once; [Retryable] marks a plain error worth retrying.
//
// # Testing
//
// Pass a *clock.Mock with [WithClock], or run under testing/synctest with the
// default clock: Retry starts no goroutine and every wait is a timer in a
// select, so a synctest bubble advances through it instantly.
package backoff
