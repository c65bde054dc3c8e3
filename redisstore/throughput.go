package redisstore

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/wapace/wapace/throughput/throughputstore"
)

// Throughput returns the Store's implementation of [throughputstore.Store], for
// throughput.WithStore: the buckets of business numbers and budgets and the
// tiers of portfolios, in the same Redis under the same prefix.
// (pairstore.Store and throughputstore.Store both name methods Reserve and
// Cancel, so one type cannot implement both.)
func (s *Store) Throughput() throughputstore.Store { return &Throughput{s: s} }

// Throughput implements [throughputstore.Store] on Redis, one script per
// decision. Get it from [Store.Throughput]. It is safe for concurrent use.
type Throughput struct{ s *Store }

var _ throughputstore.Store = (*Throughput)(nil)

// bucketKey is key's hash. A key that is a business number's ID shares the
// hash slot of that number's pairs.
func (th *Throughput) bucketKey(key string) []string {
	return []string{th.s.prefix + "{" + key + "}:b"}
}

func (th *Throughput) tierKeys(key string) []string {
	base := th.s.prefix + "{t:" + key + "}"
	return []string{base + ":z", base + ":e"}
}

// bucketKeep is how long a bucket's key outlives its state.
const bucketKeep = time.Second + SkewAllowance

// bucketKeepArg tells a bucket script how to expire the key for a call at
// t, as keepArg does for a pair's.
func bucketKeepArg(t time.Time) any { return keepFor(t, bucketKeepAbs, bucketKeepRel) }

var (
	bucketKeepAbs any = int64(bucketKeep)
	bucketKeepRel any = -int64(bucketKeep)
)

// Reserve implements [throughputstore.Store]: BucketState.Reserve in one script.
func (th *Throughput) Reserve(ctx context.Context, key string, t time.Time, n int, interval time.Duration, burst int, maxWait time.Duration) (throughputstore.BucketTicket, bool, error) {
	wait := int64(-1)
	if maxWait < time.Duration(math.MaxInt64) {
		wait = int64(max(maxWait, 0))
	}
	sec, nsec := secNs(t.UnixNano())
	mk := th.s.markers.get(key)
	var qo any = ""
	if mk.lost {
		qo = mk.since - t.UnixNano()
	}
	v, err := th.s.run(ctx, "bucket reserve", bucketReserve,
		[]string{th.s.prefix + "{" + key + "}:b", th.s.markerKey(key)},
		sec, nsec, n, int64(max(interval, 0)), burst, wait, bucketKeepArg(t), mk.arg(), qo, 0)
	if th.fallback(err) {
		return th.localReserve(ctx, key, t, n, interval, burst, maxWait)
	}
	if err != nil {
		return throughputstore.BucketTicket{}, false, err
	}
	a := replyArray(v)
	if len(a) == 8 {
		th.s.learn(key, replyStr(a, 7), mk.raw != "")
	}
	bs, bn := float64(replyInt(a, 1)), float64(replyInt(a, 2))
	tk := throughputstore.BucketTicket{Act: offsetAt(bs, bn, float64(replyInt(a, 3)))}
	if replyInt(a, 0) != 1 {
		return tk, false, nil
	}
	tk.ID, tk.PrevTop = replyUint(a, 4), replyUint(a, 5)
	if replyStr(a, 6) != "z" {
		tk.PrevTAT = offsetAt(bs, bn, float64(replyInt(a, 6)))
	}
	return tk, true, nil
}

// Cancel implements [throughputstore.Store]: BucketState.Cancel in one script.
func (th *Throughput) Cancel(ctx context.Context, key string, t time.Time, tk throughputstore.BucketTicket) (bool, error) {
	if tk.ID == 0 {
		return false, nil
	}
	if tk.ID&localBit != 0 {
		return th.localCancel(ctx, key, t, tk)
	}
	sec, nsec := secNs(t.UnixNano())
	var ps, pn any = "z", 0
	if tk.PrevTAT > 0 {
		ps, pn = secNs(tk.PrevTAT)
	}
	as, an := secNs(tk.Act)
	v, err := th.s.run(ctx, "bucket cancel", bucketCancel, th.bucketKey(key), sec, nsec, bucketKeepArg(t),
		strconv.FormatUint(tk.ID, 10), strconv.FormatUint(tk.PrevTop, 10), ps, pn, as, an)
	if err != nil {
		return false, err
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// Hold implements [throughputstore.Store]: BucketState.Extend in one script.
func (th *Throughput) Hold(ctx context.Context, key string, until time.Time) (time.Time, error) {
	sec, nsec := secNs(until.UnixNano())
	v, err := th.s.run(ctx, "bucket hold", bucketHold, th.bucketKey(key), sec, nsec, bucketKeepArg(until))
	if th.fallback(err) {
		return th.s.localTP.Hold(ctx, key, until)
	}
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, fromBase(replyArray(v), 0)), nil
}

// Claim implements [throughputstore.Store]: TierState.Claim in one script.
func (th *Throughput) Claim(ctx context.Context, key string, to uint64, t time.Time, limit int, window time.Duration) (throughputstore.TierTicket, bool, time.Time, error) {
	sec, nsec := secNs(t.UnixNano())
	v, err := th.s.run(ctx, "tier claim", tierClaim, th.tierKeys(key), sec, nsec,
		strconv.FormatUint(to, 10), limit, int64(window), int64(time.Second+SkewAllowance), int64(SkewAllowance))
	if th.fallback(err) {
		return th.s.localTP.Claim(ctx, key, to, t, limit, window)
	}
	if err != nil {
		return throughputstore.TierTicket{}, false, time.Time{}, err
	}
	a := replyArray(v)
	at := fromBase(a, 1)
	if replyInt(a, 0) != 1 {
		return throughputstore.TierTicket{}, false, time.Unix(0, at), nil
	}
	return throughputstore.TierTicket{To: to, At: at, New: replyInt(a, 4) == 1}, true, time.Time{}, nil
}

// Release implements [throughputstore.Store]: TierState.Release in one script.
func (th *Throughput) Release(ctx context.Context, key string, tk throughputstore.TierTicket) (bool, error) {
	if !tk.New {
		return false, nil
	}
	sec, nsec := secNs(tk.At)
	v, err := th.s.run(ctx, "tier release", tierRelease, th.tierKeys(key),
		strconv.FormatUint(tk.To, 10), sec, nsec, "1")
	if th.fallback(err) {
		return th.s.localTP.Release(ctx, key, tk)
	}
	if err != nil {
		return false, err
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// Count implements [throughputstore.Store]: TierState.Count, reading only.
func (th *Throughput) Count(ctx context.Context, key string, t time.Time, window time.Duration) (int, error) {
	sec, nsec := secNs(t.UnixNano())
	v, err := th.s.runRO(ctx, "tier count", tierCount, th.tierKeys(key), sec, nsec, int64(window))
	if th.fallback(err) {
		return th.s.localTP.Count(ctx, key, t, window)
	}
	if err != nil {
		return 0, err
	}
	n, _ := v.(int64)
	return int(n), nil
}
