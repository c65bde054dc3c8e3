// Package simclock forwards to the public package
// github.com/wapace/wapace/simclock, so that code written against the old
// internal path keeps building while branches merge.
//
// Deprecated: import github.com/wapace/wapace/simclock.
package simclock

import (
	"time"

	"github.com/wapace/wapace/simclock"
)

// Clock is simclock.Clock.
type Clock = simclock.Clock

// New is simclock.New.
func New(start time.Time) *Clock { return simclock.New(start) }
