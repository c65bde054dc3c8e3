package backoff

import (
	"errors"
	"time"
)

// IsRetryable is Retry's default policy, for the tests of the external
// package.
var IsRetryable = isRetryable

// Attempts returns the number of attempts after which Retry stopped, when
// err is the error Retry returns on giving up.
func Attempts(err error) (int, bool) {
	var stop *stopError
	if !errors.As(err, &stop) {
		return 0, false
	}
	return stop.Attempts, true
}

// StopError builds the error Retry returns on giving up, to test its
// message.
func StopError(reason error, attempts int, last error) error {
	return &stopError{Reason: reason, Attempts: attempts, Last: last}
}

// Constant waits d before every retry (Exponential with a factor of 1).
func Constant(d time.Duration) Schedule { return Exponential{Initial: d, Factor: 1} }
