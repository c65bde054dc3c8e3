package redisstore

import (
	"context"
	"time"
)

// bucketSlack keeps a bucket's key a little after it is full again.
const bucketSlack = 10 * time.Second

// Adaptive rate recovery, as package throughput applies it: every 10 s
// without a 130429 gives back a tenth of the configured rate.
const (
	recoverStep  = 0.1
	recoverEvery = 10 * time.Second
)

// bucketSpec is a token bucket: burst tokens, one more every emission.
type bucketSpec struct {
	emission float64 // ns per token at the full rate
	burst    int
}

// bucketGrant is what the bucket script decided.
type bucketGrant struct {
	ok       bool
	act      time.Time
	tat      string // the bucket's tat after the reservation
	prevTat  string
	n        int
	emission float64
}

func (s *Store) reserveBucket(ctx context.Context, key string, spec bucketSpec, t time.Time, n int, allowOnly bool) (bucketGrant, error) {
	only := "0"
	if allowOnly {
		only = "1"
	}
	v, err := s.run(ctx, "bucket reserve", bucketReserve, []string{key},
		instant(t), n, spec.emission, spec.burst, only, int64(bucketSlack), recoverStep, int64(recoverEvery))
	if err != nil {
		return bucketGrant{}, err
	}
	a := replyArray(v)
	act, _ := parseInstant(replyStr(a, 1))
	return bucketGrant{ok: replyInt(a, 0) == 1, act: act, tat: replyStr(a, 2), prevTat: replyStr(a, 3), n: n, emission: spec.emission}, nil
}

// cancelBucket gives g back at t: its tokens less those reserved after it,
// and nothing once its time has come (unless checkTime is false: a refund).
func (s *Store) cancelBucket(ctx context.Context, key string, t time.Time, g bucketGrant, checkTime bool) (bool, error) {
	check := "0"
	if checkTime {
		check = "1"
	}
	v, err := s.run(ctx, "bucket cancel", bucketCancel, []string{key},
		instant(t), instant(g.act), g.tat, g.n, g.emission, check)
	if err != nil {
		return false, err
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// refuseBucket holds the bucket at t for holds[count] (the last repeating),
// count being the consecutive refusals recorded under counter, and
// multiplies the rate by cut (1: unchanged) down to minFactor.
func (s *Store) refuseBucket(ctx context.Context, key string, spec bucketSpec, t time.Time, counter string, cut, minFactor float64, holds []time.Duration) (time.Duration, error) {
	args := []any{instant(t), int64(bucketSlack), counter, "", cut, minFactor, spec.emission}
	for _, h := range holds {
		args = append(args, int64(h))
	}
	v, err := s.run(ctx, "bucket refused", bucketRefused, []string{key}, args...)
	if err != nil {
		return 0, err
	}
	n, _ := v.(int64)
	return time.Duration(n), nil
}

func (s *Store) acceptBucket(ctx context.Context, key string) error {
	_, err := s.run(ctx, "bucket accepted", bucketAccepted, []string{key})
	return err
}

// bucketInfo is a bucket's state, read without changing it.
type bucketInfo struct {
	tat, hold time.Time // zero when unset
	factor    float64
}

func (s *Store) readBucket(ctx context.Context, key string) (bucketInfo, error) {
	v, err := s.runRO(ctx, "bucket query", bucketState, []string{key})
	if err != nil {
		return bucketInfo{}, err
	}
	a := replyArray(v)
	var b bucketInfo
	b.tat, _ = parseInstant(replyStr(a, 0))
	b.hold, _ = parseInstant(replyStr(a, 1))
	b.factor = 1
	if f := replyStr(a, 2); f != "" {
		if x, err := parseFloat(f); err == nil {
			b.factor = x
		}
	}
	return b, nil
}
