package redisstore

import (
	"context"
	"strconv"
	"time"
)

// tierSlack keeps a tier's keys a little after the last count expires.
const tierSlack = 10 * time.Second

// tierGrant is what the tier script decided.
type tierGrant struct {
	ok       bool
	retryAt  time.Time // when refused: when the oldest count expires
	prev     string    // the recipient's previous instant ("" if it was new)
	recorded string    // the instant now recorded for it
}

func (s *Store) admitTier(ctx context.Context, name string, to uint64, t time.Time, limit int, window time.Duration) (tierGrant, error) {
	v, err := s.run(ctx, "tier admit", tierAdmit, s.tierKeys(name),
		instant(t), strconv.FormatUint(to, 10), limit, int64(window), int64(tierSlack))
	if err != nil {
		return tierGrant{}, err
	}
	a := replyArray(v)
	g := tierGrant{ok: replyInt(a, 0) == 1, prev: replyStr(a, 2), recorded: replyStr(a, 3)}
	g.retryAt, _ = parseInstant(replyStr(a, 1))
	return g, nil
}

func (s *Store) giveBackTier(ctx context.Context, name string, to uint64, g tierGrant) (bool, error) {
	if !g.ok || g.recorded == "" {
		return false, nil
	}
	v, err := s.run(ctx, "tier give back", tierGiveBack, s.tierKeys(name),
		strconv.FormatUint(to, 10), g.recorded, g.prev)
	if err != nil {
		return false, err
	}
	n, _ := v.(int64)
	return n == 1, nil
}

func (s *Store) countTier(ctx context.Context, name string, t time.Time, window time.Duration) (int, error) {
	v, err := s.runRO(ctx, "tier count", tierCount, s.tierKeys(name), instant(t), int64(window))
	if err != nil {
		return 0, err
	}
	n, _ := v.(int64)
	return int(n), nil
}

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
