//go:build unix

package cputime_test

import (
	"testing"
	"time"

	"github.com/wapace/wapace/internal/cputime"
)

// TestSelfCountsWork: spinning for 50 ms of wall time adds CPU time.
func TestSelfCountsWork(t *testing.T) {
	before := cputime.Self()
	if before <= 0 {
		t.Fatalf("Self() = %v before any work", before)
	}
	x := 0
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
		x++
	}
	if after := cputime.Self(); after <= before {
		t.Errorf("Self() went from %v to %v over 50 ms of spinning (%d turns)", before, after, x)
	}
}
