package redisstore

import (
	"context"
	"time"
)

// pairSlack keeps a pair's key a little after its debt is repaid, so that
// calls whose instants arrive slightly out of order, or from a host whose
// clock runs behind, still see it.
const pairSlack = 10 * time.Second

// pairMemory is how long a pair's count of 131056 answers outlives its
// hold (as pairlimit keeps it in memory).
const pairMemory = 15 * time.Minute

// pairGrant is what the pair script decided.
type pairGrant struct {
	ok   bool
	act  time.Time // when the messages may go
	seq  string    // the pair's change count after the reservation
	prev string    // the due it replaced ("" when none)
	due  string    // the due it set
}

func (s *Store) reservePair(ctx context.Context, from, to uint64, t time.Time, n int, interval, margin time.Duration, allowOnly bool) (pairGrant, error) {
	only := "0"
	if allowOnly {
		only = "1"
	}
	v, err := s.run(ctx, "pair reserve", pairReserve, []string{s.pairKey(from, to)},
		instant(t), n, int64(interval), int64(margin), only, int64(pairSlack), int64(pairMemory))
	if err != nil {
		return pairGrant{}, err
	}
	a := replyArray(v)
	act, _ := parseInstant(replyStr(a, 1))
	return pairGrant{ok: replyInt(a, 0) == 1, act: act, seq: replyStr(a, 2), prev: replyStr(a, 3), due: replyStr(a, 4)}, nil
}

func (s *Store) giveBackPair(ctx context.Context, from, to uint64, t time.Time, g pairGrant, checkTime bool) (bool, error) {
	check := "0"
	if checkTime {
		check = "1"
	}
	v, err := s.run(ctx, "pair give back", pairGiveBack, []string{s.pairKey(from, to)},
		instant(t), instant(g.act), g.seq, g.prev, g.due, check)
	if err != nil {
		return false, err
	}
	n, _ := v.(int64)
	return n == 1, nil
}

func (s *Store) refusedPair(ctx context.Context, from, to uint64, t time.Time, holds []time.Duration) (time.Duration, error) {
	args := []any{instant(t), int64(pairSlack), int64(pairMemory)}
	for _, h := range holds {
		args = append(args, int64(h))
	}
	v, err := s.run(ctx, "pair refused", pairRefused, []string{s.pairKey(from, to)}, args...)
	if err != nil {
		return 0, err
	}
	n, _ := v.(int64)
	return time.Duration(n), nil
}

func (s *Store) acceptedPair(ctx context.Context, from, to uint64) error {
	_, err := s.run(ctx, "pair accepted", pairAccepted, []string{s.pairKey(from, to)})
	return err
}

// dueOfPair returns when the pair's debt is repaid (ok false: it owes
// nothing), reading only.
func (s *Store) dueOfPair(ctx context.Context, from, to uint64) (time.Time, bool, error) {
	v, err := s.runRO(ctx, "pair query", pairDue, []string{s.pairKey(from, to)})
	if err != nil {
		return time.Time{}, false, err
	}
	str, _ := v.(string)
	d, ok := parseInstant(str)
	return d, ok, nil
}
