package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// localBit marks the IDs of tickets the local fallback handed out, so that
// their give-back goes to the store that made them. Redis counters never
// reach it.
const localBit = 1 << 63

// WithLocalFallback makes the Store (and its Throughput) decide in this
// process's memory while Redis cannot be reached, instead of failing closed
// with ErrUnavailable.
// c is the clock the in-memory store judges expiry by (the real clock if
// nil).
//
// The risk, accepted by opting in: during an outage each process paces
// alone. Two processes replying to the same user may then both send within
// six seconds and draw 131056, and numbers shared by several processes
// may exceed their throughput (130429), because neither sees the other's
// sends. Debt taken locally is not copied to Redis when it answers again,
// so the risk lasts up to one pair interval (6 s plus the margin) after the
// outage ends. Without this option (the default) a decision that cannot
// reach Redis fails and nothing is sent on it.
func WithLocalFallback(c clock.Clock) Option {
	return func(s *Store) {
		if c == nil {
			c = clock.New()
		}
		s.local = pairlimit.NewMemoryStore(c)
		s.localTP = throughputstore.NewMemoryStore(c)
	}
}

// fallback reports whether err is a Redis failure the local store should
// absorb.
func (s *Store) fallback(err error) bool {
	return s.local != nil && errors.Is(err, ErrUnavailable)
}

func (s *Store) localReserve(ctx context.Context, p pairlimit.Pair, t time.Time, cost, maxWait time.Duration) (pairstore.Ticket, bool, error) {
	tk, ok, err := s.local.Reserve(ctx, p, t, cost, maxWait)
	if ok {
		tk.ID |= localBit
		if tk.PrevTop != 0 {
			tk.PrevTop |= localBit
		}
	}
	return tk, ok, err
}

func (s *Store) localCancel(ctx context.Context, p pairlimit.Pair, t time.Time, tk pairstore.Ticket) (bool, error) {
	tk.ID &^= localBit
	tk.PrevTop &^= localBit
	return s.local.Cancel(ctx, p, t, tk)
}

func (th *Throughput) fallback(err error) bool {
	return th.s.localTP != nil && errors.Is(err, ErrUnavailable)
}

func (th *Throughput) localReserve(ctx context.Context, key string, t time.Time, n int, interval time.Duration, burst int, maxWait time.Duration) (throughputstore.BucketTicket, bool, error) {
	tk, ok, err := th.s.localTP.Reserve(ctx, key, t, n, interval, burst, maxWait)
	if ok {
		tk.ID |= localBit
		if tk.PrevTop != 0 {
			tk.PrevTop |= localBit
		}
	}
	return tk, ok, err
}

func (th *Throughput) localCancel(ctx context.Context, key string, t time.Time, tk throughputstore.BucketTicket) (bool, error) {
	if th.s.localTP == nil {
		return false, nil
	}
	tk.ID &^= localBit
	tk.PrevTop &^= localBit
	return th.s.localTP.Cancel(ctx, key, t, tk)
}
