package backoff

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/clockwait"
)

// Reasons Retry stops early; the error it returns matches one of them (or
// the context's error) with errors.Is, and wraps the last error from op too.
var (
	// ErrMaxAttempts: op failed as many times as WithMaxAttempts allows.
	ErrMaxAttempts = errors.New("backoff: max attempts reached")
	// ErrDeadline: the next wait would end after the deadline (WithDeadline,
	// or the context's deadline), so Retry gave up at once instead of
	// sleeping until it. It is the module's one "cannot fit before your
	// deadline" error: the waits of pairlimit and throughput return it too,
	// at once and reserving nothing.
	ErrDeadline = errors.New("backoff: the wait would end after the deadline")
)

// defaultMaxAttempts is the number of attempts Retry makes unless told
// otherwise: one try and five retries. With [Meta] the five waits add up to
// 341 s, longer than any pair's debt can last.
const defaultMaxAttempts = 6

// stopError is returned when Retry gives up on an error it would otherwise
// retry. It matches Reason and Last with errors.Is and errors.As.
type stopError struct {
	Reason   error // ErrMaxAttempts, ErrDeadline, or the context's error
	Attempts int   // the number of times op ran
	Last     error // the last error op returned
}

// Error describes why Retry stopped, after how many attempts, and the last
// error.
func (e *stopError) Error() string {
	return e.Reason.Error() + " after " + strconv.Itoa(e.Attempts) + " attempts: " + e.Last.Error()
}

// Unwrap returns Reason and Last.
func (e *stopError) Unwrap() []error { return []error{e.Reason, e.Last} }

// retryAfterer is implemented by errors that carry the server's own hint
// of how long to wait (a method RetryAfter() time.Duration). Retry finds it
// with errors.As and lets it replace the schedule's delay.
type retryAfterer interface {
	RetryAfter() time.Duration
}

// RetryAfter wraps err with a wait that replaces the schedule's next delay.
// The wrapped error is retryable by default. It returns nil if err is nil.
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{wait: d, err: err}
}

type retryAfterError struct {
	wait time.Duration
	err  error
}

func (e *retryAfterError) Error() string             { return e.err.Error() }
func (e *retryAfterError) Unwrap() error             { return e.err }
func (e *retryAfterError) RetryAfter() time.Duration { return e.wait }

// permanentError marks an error that must stop Retry at once.
type permanentError struct {
	Err error
}

func (e *permanentError) Error() string { return e.Err.Error() }
func (e *permanentError) Unwrap() error { return e.Err }

// Permanent wraps err so that Retry stops at once and returns err itself.
// It returns nil if err is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{Err: err}
}

// Retryable wraps a plain error so that the default policy retries it.
// It returns nil if err is nil.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &retryableError{err}
}

type retryableError struct{ err error }

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

// isRetryable is Retry's default policy (see WithRetryIf).
func isRetryable(err error) bool {
	if err == nil {
		return false
	}
	var p *permanentError
	if errors.As(err, &p) {
		return false
	}
	var r *retryableError
	if errors.As(err, &r) {
		return true
	}
	var ra retryAfterer
	if errors.As(err, &ra) {
		return true
	}
	var code errcodes.Code
	if errors.As(err, &code) {
		cl := errcodes.Lookup(code)
		return cl.Retryable && !cl.OutcomeUnknown
	}
	return false
}

// Option configures Retry.
type Option func(*config)

type config struct {
	clock       clock.Clock
	maxAttempts int
	deadline    time.Time
	retryIf     func(error) bool
	notify      func(retry int, err error, wait time.Duration)
}

// WithClock makes Retry wait on c instead of the real clock.
func WithClock(c clock.Clock) Option {
	return func(cfg *config) {
		if c != nil {
			cfg.clock = c
		}
	}
}

// WithMaxAttempts bounds the number of times op runs (first try included).
// n <= 0 removes the bound: Retry then stops only on success, a
// non-retryable error, the deadline or the context. The default is 6: one
// try and five retries, whose waits with [Meta] add up to 341 s, longer
// than any pair's debt can last.
func WithMaxAttempts(n int) Option {
	return func(cfg *config) { cfg.maxAttempts = n }
}

// WithDeadline stops Retry with [ErrDeadline] as soon as the next wait would
// end after t, without waiting. Use it for a message's freshness deadline.
func WithDeadline(t time.Time) Option {
	return func(cfg *config) { cfg.deadline = t }
}

// WithRetryIf replaces the policy that decides whether an error is retried.
// The default policy retries an error wrapped by [Retryable] or
// [RetryAfter], or one with a RetryAfter() time.Duration method; and an
// error carrying an [errcodes.Code] (an [*errcodes.Error] or a Code itself)
// when the code is retryable and the answer proves that the request was
// refused (Class.OutcomeUnknown is false, so a send is never repeated
// blindly); nothing else. An error wrapped by [Permanent] stops Retry
// whatever f says.
func WithRetryIf(f func(error) bool) Option {
	return func(cfg *config) {
		if f != nil {
			cfg.retryIf = f
		}
	}
}

// WithNotify calls f before each wait with the retry number (0 for the
// first retry), the error that caused it and the wait.
func WithNotify(f func(retry int, err error, wait time.Duration)) Option {
	return func(cfg *config) { cfg.notify = f }
}

// Retry runs op until it succeeds, returns an error the policy does not
// retry, or a limit is reached. Between attempts it waits on the configured
// clock, in a select with ctx.Done(): s.Delay(retry), raised to the hold
// errcodes gives the error's code after that many refusals
// ([errcodes.Class].HoldAfter: its Wait, doubled up to MaxWait), and
// replaced outright by the error's own hint when it has one (a method
// RetryAfter() time.Duration, as [RetryAfter] wraps).
//
// Retry returns nil on success; op's error as it is when it is not retried
// (unwrapped from [Permanent]); and otherwise an error that matches
// [ErrMaxAttempts], [ErrDeadline] or the context's error, and the last error
// from op, with errors.Is, and says after how many attempts it stopped. When the next wait would end after the deadline
// (WithDeadline, or ctx's deadline, whichever is sooner) Retry returns
// ErrDeadline at once instead of sleeping until it and failing then.
// Retry starts no goroutine. A context already done runs op no more.
func Retry(ctx context.Context, s Schedule, op func(context.Context) error, opts ...Option) error {
	cfg := config{clock: clock.New(), maxAttempts: defaultMaxAttempts, retryIf: isRetryable}
	for _, o := range opts {
		o(&cfg)
	}
	deadline := cfg.deadline
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for attempt := 0; ; {
		err := op(ctx)
		attempt++
		if err == nil {
			return nil
		}
		var p *permanentError
		if errors.As(err, &p) {
			return p.Err
		}
		if !cfg.retryIf(err) {
			return err
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return &stopError{Reason: ctxErr, Attempts: attempt, Last: err}
		}
		if cfg.maxAttempts > 0 && attempt >= cfg.maxAttempts {
			return &stopError{Reason: ErrMaxAttempts, Attempts: attempt, Last: err}
		}
		wait := s.Delay(attempt - 1)
		var code errcodes.Code
		if errors.As(err, &code) {
			// The code's hold in errcodes, the one table of waits (24 h for
			// 131049; 10 s doubling to a minute for 131057), beats the
			// schedule.
			wait = max(wait, errcodes.Lookup(code).HoldAfter(attempt-1))
		}
		var ra retryAfterer
		if errors.As(err, &ra) {
			wait = ra.RetryAfter()
		}
		wait = max(wait, 0)
		if !deadline.IsZero() && cfg.clock.Now().Add(wait).After(deadline) {
			return &stopError{Reason: ErrDeadline, Attempts: attempt, Last: err}
		}
		if cfg.notify != nil {
			cfg.notify(attempt-1, err, wait)
		}
		if ctxErr := clockwait.Sleep(ctx, cfg.clock, wait); ctxErr != nil {
			return &stopError{Reason: ctxErr, Attempts: attempt, Last: err}
		}
	}
}
