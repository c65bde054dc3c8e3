package outbox_test

import (
	"time"

	"github.com/wapace/wapace/internal/cputime"
)

// cpuTime is the user and system CPU time of this process so far (0 where
// it cannot be read).
func cpuTime() time.Duration { return cputime.Self() }
