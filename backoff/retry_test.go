package backoff_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/clocktest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var pairErr = &errcodes.Error{HTTPStatus: 400, Code: errcodes.PairRateLimit}

// failing returns an op that fails with err the first n times, recording the
// offset from start of every attempt.
func failing(now func() time.Time, n int, err error, at *[]time.Duration) func(context.Context) error {
	start := now()
	calls := 0
	return func(context.Context) error {
		*at = append(*at, now().Sub(start))
		calls++
		if calls <= n {
			return err
		}
		return nil
	}
}

func secs(s ...int) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, v := range s {
		out[i] = time.Duration(v) * time.Second
	}
	return out
}

func TestRetryMetaInstantsSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var at []time.Duration
		err := backoff.Retry(t.Context(), backoff.Meta, failing(time.Now, 4, pairErr, &at))
		if err != nil {
			t.Fatalf("Retry: %v", err)
		}
		if diff := cmp.Diff(secs(0, 1, 5, 21, 85), at); diff != "" {
			t.Errorf("attempt instants (-want +got):\n%s", diff)
		}
	})
}

func TestRetryMetaInstantsMockClock(t *testing.T) {
	t.Parallel()
	clk := clocktest.New()
	var at []time.Duration
	var err error
	waits := clk.Run(func() {
		err = backoff.Retry(t.Context(), backoff.Meta, failing(clk.Now, 4, pairErr, &at), backoff.WithClock(clk))
	})
	if err != nil {
		t.Fatalf("Retry: %v", err)
	}
	if diff := cmp.Diff(secs(0, 1, 5, 21, 85), at); diff != "" {
		t.Errorf("attempt instants (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(secs(1, 4, 16, 64), waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

func TestRetryStops(t *testing.T) {
	plain := errors.New("plain")
	tests := []struct {
		name     string
		s        backoff.Schedule
		failures int
		err      error
		opts     []backoff.Option
		ctx      func(context.Context) (context.Context, context.CancelFunc)
		want     []time.Duration // attempt instants
		reason   error           // nil: op's error comes back as is
		wantErr  error
	}{
		{name: "max attempts", s: backoff.Meta, failures: 10, err: pairErr,
			opts: []backoff.Option{backoff.WithMaxAttempts(3)},
			want: secs(0, 1, 5), reason: backoff.ErrMaxAttempts, wantErr: errcodes.PairRateLimit},
		{name: "default max attempts is six", s: backoff.Meta, failures: 10, err: pairErr,
			want: secs(0, 1, 5, 21, 85, 341), reason: backoff.ErrMaxAttempts, wantErr: errcodes.PairRateLimit},
		{name: "deadline cuts before waiting", s: backoff.Meta, failures: 10, err: pairErr,
			opts: []backoff.Option{backoff.WithDeadline(synctestEpoch.Add(10 * time.Second))},
			want: secs(0, 1, 5), reason: backoff.ErrDeadline, wantErr: errcodes.PairRateLimit},
		{name: "deadline exactly reached is allowed", s: backoff.Meta, failures: 2, err: pairErr,
			opts: []backoff.Option{backoff.WithDeadline(synctestEpoch.Add(5 * time.Second))},
			want: secs(0, 1, 5)},
		{name: "context deadline cuts before waiting", s: backoff.Meta, failures: 10, err: pairErr,
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, 20*time.Second)
			},
			want: secs(0, 1, 5), reason: backoff.ErrDeadline, wantErr: errcodes.PairRateLimit},
		{name: "retry-after beats the schedule", s: backoff.Meta, failures: 2, err: backoff.RetryAfter(30*time.Second, plain),
			want: secs(0, 30, 60)},
		{name: "131049 waits at least a day", s: backoff.Meta, failures: 1, err: &errcodes.Error{Code: errcodes.MarketingLimit},
			opts: []backoff.Option{backoff.WithMaxAttempts(0)},
			want: secs(0, 86400)},
		{name: "131049 against a freshness deadline fails at once", s: backoff.Meta, failures: 1, err: &errcodes.Error{Code: errcodes.MarketingLimit},
			opts: []backoff.Option{backoff.WithDeadline(synctestEpoch.Add(time.Hour))},
			want: secs(0), reason: backoff.ErrDeadline, wantErr: errcodes.MarketingLimit},
		{name: "permanent stops at once", s: backoff.Meta, failures: 5, err: backoff.Permanent(pairErr),
			want: secs(0), wantErr: errcodes.PairRateLimit},
		{name: "plain error is not retried", s: backoff.Meta, failures: 5, err: plain,
			want: secs(0), wantErr: plain},
		{name: "plain error marked retryable", s: backoff.Meta, failures: 2, err: backoff.Retryable(plain),
			want: secs(0, 1, 5)},
		{name: "unknown outcome is not retried", s: backoff.Meta, failures: 5, err: &errcodes.Error{Code: errcodes.ServiceUnavailable},
			want: secs(0), wantErr: errcodes.ServiceUnavailable},
		{name: "request error is not retried", s: backoff.Meta, failures: 5, err: &errcodes.Error{Code: errcodes.InvalidParameter},
			want: secs(0), wantErr: errcodes.InvalidParameter},
		{name: "custom policy", s: backoff.Constant(time.Second), failures: 2, err: plain,
			opts: []backoff.Option{backoff.WithRetryIf(func(error) bool { return true })},
			want: secs(0, 1, 2)},
		{name: "no attempt bound", s: backoff.Constant(time.Second), failures: 9, err: pairErr,
			opts: []backoff.Option{backoff.WithMaxAttempts(-1)},
			want: secs(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if !time.Now().Equal(synctestEpoch) {
					t.Fatalf("synctest epoch moved: %v", time.Now())
				}
				ctx := t.Context()
				if tt.ctx != nil {
					var cancel context.CancelFunc
					ctx, cancel = tt.ctx(ctx)
					defer cancel()
				}
				var at []time.Duration
				err := backoff.Retry(ctx, tt.s, failing(time.Now, tt.failures, tt.err, &at), tt.opts...)
				if diff := cmp.Diff(tt.want, at); diff != "" {
					t.Errorf("attempt instants (-want +got):\n%s", diff)
				}
				// Giving up never waits: the clock stands at the last attempt.
				if now := time.Since(synctestEpoch); now != tt.want[len(tt.want)-1] {
					t.Errorf("Retry returned at +%v, want +%v", now, tt.want[len(tt.want)-1])
				}
				switch {
				case tt.reason == nil && tt.wantErr == nil:
					if err != nil {
						t.Fatalf("Retry = %v, want success", err)
					}
				case tt.reason == nil:
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("Retry = %v, want %v", err, tt.wantErr)
					}
					if _, stopped := backoff.Attempts(err); stopped {
						t.Fatalf("Retry = %v, want op's error as is", err)
					}
				default:
					attempts, stopped := backoff.Attempts(err)
					if !stopped || !errors.Is(err, tt.reason) || !errors.Is(err, tt.wantErr) {
						t.Fatalf("Retry = %v, want a stop matching %v and %v", err, tt.reason, tt.wantErr)
					}
					if attempts != len(tt.want) {
						t.Errorf("Attempts = %d, want %d", attempts, len(tt.want))
					}
				}
			})
		})
	}
}

// synctestEpoch is where every synctest bubble's clock starts.
var synctestEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func TestRetryCancelDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		var at []time.Duration
		done := make(chan error, 1)
		go func() { done <- backoff.Retry(ctx, backoff.Meta, failing(time.Now, 10, pairErr, &at)) }()
		time.Sleep(3 * time.Second) // inside the 4 s wait before the third attempt
		cancel()
		err := <-done
		if !errors.Is(err, context.Canceled) || !errors.Is(err, errcodes.PairRateLimit) {
			t.Fatalf("Retry = %v, want Canceled wrapping the 131056", err)
		}
		if diff := cmp.Diff(secs(0, 1), at); diff != "" {
			t.Errorf("attempt instants (-want +got):\n%s", diff)
		}
		if got := time.Since(synctestEpoch); got != 3*time.Second {
			t.Errorf("returned at +%v, want +3s (at once on cancel)", got)
		}
	})
}

func TestRetryContextDoneBeforeStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := 0
	err := backoff.Retry(ctx, backoff.Meta, func(context.Context) error { calls++; return nil })
	if !errors.Is(err, context.Canceled) || calls != 0 {
		t.Fatalf("Retry = %v after %d calls, want Canceled and no call", err, calls)
	}
}

func TestRetryContextCancelledByOp(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	err := backoff.Retry(ctx, backoff.Meta, func(context.Context) error { cancel(); return pairErr })
	if attempts, stopped := backoff.Attempts(err); !stopped || !errors.Is(err, context.Canceled) || attempts != 1 {
		t.Fatalf("Retry = %v, want a stop for Canceled after 1 attempt", err)
	}
}

func TestRetryNotify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type call struct {
			Retry int
			Wait  time.Duration
		}
		var calls []call
		var at []time.Duration
		err := backoff.Retry(t.Context(), backoff.Meta, failing(time.Now, 3, pairErr, &at),
			backoff.WithNotify(func(retry int, err error, wait time.Duration) {
				if !errors.Is(err, errcodes.PairRateLimit) {
					t.Errorf("notify got %v", err)
				}
				calls = append(calls, call{retry, wait})
			}))
		if err != nil {
			t.Fatal(err)
		}
		want := []call{{0, time.Second}, {1, 4 * time.Second}, {2, 16 * time.Second}}
		if diff := cmp.Diff(want, calls); diff != "" {
			t.Errorf("notify calls (-want +got):\n%s", diff)
		}
	})
}

func TestIsRetryable(t *testing.T) {
	t.Parallel()
	plain := errors.New("x")
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{plain, false},
		{backoff.Retryable(plain), true},
		{backoff.RetryAfter(time.Second, plain), true},
		{backoff.Permanent(backoff.Retryable(plain)), false},
		{fmt.Errorf("send: %w", pairErr), true},
		{errcodes.ThroughputLimit, true},
		{&errcodes.Error{Code: errcodes.Maintenance}, true},
		{&errcodes.Error{Code: errcodes.SomethingWentWrong}, false},
		{&errcodes.Error{Code: errcodes.AccessTokenExpired}, false},
		{&errcodes.Error{Code: 424242}, false},
	}
	for _, tt := range tests {
		if got := backoff.IsRetryable(tt.err); got != tt.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	if backoff.Permanent(nil) != nil || backoff.Retryable(nil) != nil || backoff.RetryAfter(time.Second, nil) != nil {
		t.Error("wrapping nil must give nil")
	}
}

func TestStopErrorMessage(t *testing.T) {
	t.Parallel()
	err := backoff.StopError(backoff.ErrMaxAttempts, 3, errcodes.PairRateLimit)
	want := "backoff: max attempts reached after 3 attempts: errcodes: 131056 (Business Account, Consumer Account) pair rate limit hit"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

// TestRetryWaitsTheCodesHold: between attempts Retry waits at least the
// hold errcodes gives the code after that many refusals (its one wait per
// code), doubling where errcodes doubles it.
func TestRetryWaitsTheCodesHold(t *testing.T) {
	t.Parallel()
	zero := backoff.Constant(0)
	for _, tc := range []struct {
		code errcodes.Code
		want []time.Duration
	}{
		{errcodes.Maintenance, []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute}},
		{errcodes.AppRateLimit, []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute}},
		{errcodes.ThroughputLimit, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
		{errcodes.MaintenanceMode, []time.Duration{2 * time.Minute, 2 * time.Minute}},
	} {
		synctest.Test(t, func(t *testing.T) {
			var waits []time.Duration
			n := 0
			err := backoff.Retry(t.Context(), zero, func(context.Context) error {
				if n++; n <= len(tc.want) {
					return &errcodes.Error{Code: tc.code}
				}
				return nil
			}, backoff.WithMaxAttempts(len(tc.want)+1),
				backoff.WithNotify(func(_ int, _ error, w time.Duration) { waits = append(waits, w) }))
			if err != nil {
				t.Fatalf("%d: %v", tc.code, err)
			}
			if fmt.Sprint(waits) != fmt.Sprint(tc.want) {
				t.Errorf("%d: waits %v, want %v", tc.code, waits, tc.want)
			}
		})
	}
}
