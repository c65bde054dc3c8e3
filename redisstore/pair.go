package redisstore

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/wapace/wapace/internal/sat"
	"github.com/wapace/wapace/pairlimit"
)

var _ pairlimit.Store = (*Store)(nil)

// pairKey is the pair's key, in its number's hash slot:
// prefix{from}:p:to.
func (s *Store) pairKey(p pairlimit.Pair) string {
	return s.prefix + "{" + p.From() + "}:p:" + p.To()
}

// pairKeys is pairKey as the keys of a script.
func (s *Store) pairKeys(p pairlimit.Pair) []string { return []string{s.pairKey(p)} }

func ns(d time.Duration) string { return strconv.FormatInt(int64(d), 10) }

// secNs splits an instant into Unix seconds and nanoseconds, clamped to
// 1970 and later.
func secNs(n int64) (int64, int64) {
	n = max(n, 0)
	return n / 1e9, n % 1e9
}

// fromBase returns base (seconds, nanoseconds) + offset, from a reply,
// saturating at the int64 range (a Due saturates at its largest instant).
func fromBase(a []any, i int) int64 {
	return offsetAt(float64(replyInt(a, i)), float64(replyInt(a, i+1)), float64(replyInt(a, i+2)))
}

// Reserve implements [pairlimit.Store]: State.Reserve in one script.
func (s *Store) Reserve(ctx context.Context, p pairlimit.Pair, t time.Time, cost, maxWait time.Duration) (pairlimit.Ticket, bool, error) {
	wait := noWait
	if maxWait < pairlimit.InfDuration {
		wait = int64(max(maxWait, 0))
	}
	tn := max(t.UnixNano(), 0)
	v, err := s.runKey(ctx, "pair reserve", pairReserveHot,
		[]any{3: s.pairKey(p), 4: tn / 1e9, 5: tn % 1e9, 6: int64(max(cost, 0)), 7: wait, 8: keepArg(t)})
	if s.fallback(err) {
		return s.localReserve(ctx, p, t, cost, maxWait)
	}
	if err != nil {
		return pairlimit.Ticket{}, false, err
	}
	tk, ok, shape := reserveFrom(v, tn, cost, maxWait)
	if !shape {
		return pairlimit.Ticket{}, false, &UnavailableError{Op: "pair reserve", Err: errReply}
	}
	return tk, ok, nil
}

var pairReserveHot = newHotScript(pairReserve, pairReserveLua)

// errReply reports a script answer of the wrong shape (a key written by
// something else, or a script of another version).
var errReply = errors.New("unexpected script reply")

// reserveFrom turns pairReserveLua's answer v to a call at tn into the
// reservation and whether it was made. The script answers with the pair's
// state as it found it: alone when it reserved, in an array of one when it
// refused, so that the decision is the script's own. From that state the
// Go side replays the script's arithmetic on the same doubles (the base's
// move, act = max(t, Due), Due = act + cost saturating at the largest
// instant, the ID rule of newID): within 2^53 ns of the base that is
// pairlimit.State.Reserve exactly, and beyond it (debts or instants more
// than 104 days apart) it still names the Due the script stored. From the
// script's own five integers (miniredis) it reads them. shape reports
// whether v was either.
func reserveFrom(v any, tn int64, cost, maxWait time.Duration) (tk pairlimit.Ticket, ok, shape bool) {
	switch x := v.(type) {
	case string:
		return replayReserve(x, tn, cost)
	case []any:
		if len(x) == 1 {
			raw, isStr := x[0].(string)
			if !isStr {
				return tk, false, false
			}
			var st packedPair
			if !st.decode(raw) {
				return tk, false, false
			}
			act := tn
			if st.hasDue {
				act = max(tn, offsetAt(st.bs, st.bn, st.d))
			}
			return pairlimit.Ticket{Act: act}, false, true
		}
		if len(x) != 5 {
			return tk, false, false
		}
		r := func(i int) int64 { return replyInt(x, i) }
		tk.Act = sat.Add(tn, r(1))
		if r(0)&1 == 0 {
			return tk, false, true
		}
		tk.ID, tk.PrevTop = uint64(r(2)), uint64(r(3))
		tk.End = sat.Add(tk.Act, int64(max(cost, 0))) // the Due the script set
		if r(0)&2 != 0 {
			tk.PrevDue = sat.Add(tn, r(4))
		}
		return tk, true, true
	}
	return tk, false, false
}

// packedPair is the part of a packed pair state that Reserve reads.
type packedPair struct {
	bs, bn, d float64
	top, hw   uint64
	hasDue    bool
}

// decode reads raw as pairSave packs it ("" for no state).
func (st *packedPair) decode(raw string) bool {
	switch len(raw) {
	case 0:
		return true
	case 72:
		f := func(i int) float64 {
			return math.Float64frombits(binary.LittleEndian.Uint64([]byte(raw[8*i : 8*i+8])))
		}
		st.bs, st.bn, st.d = f(0), f(1), f(2)
		st.top, st.hw = uint64(f(4)), uint64(f(5))
		st.hasDue = uint64(f(8))&1 != 0
		return true
	}
	return false
}

// replayReserve is the reservation pairReserveLua made at tn on the state
// raw, computed with the script's doubles. Each float64 conversion rounds
// as Lua does, and forbids a fused multiply-add.
func replayReserve(raw string, tn int64, cost time.Duration) (tk pairlimit.Ticket, ok, shape bool) {
	var st packedPair
	if !st.decode(raw) {
		return tk, false, false
	}
	tsec, tns := float64(tn/1e9), float64(tn%1e9)
	bs, bn := tsec, tns
	if len(raw) > 0 {
		bs, bn = st.bs, st.bn
	}
	d := st.d
	if st.hasDue {
		tk.PrevDue = offsetAt(bs, bn, d)
	}
	t := float64((tsec-bs)*1e9) + (tns - bn)
	if t > 86400e9 || t < -86400e9 {
		if st.hasDue {
			d -= t
		}
		bs, bn, t = tsec, tns, 0
	}
	act := t
	if st.hasDue && d > t {
		act = d
	}
	d = act + float64(max(cost, 0))
	if lim := float64((9223372036-bs)*1e9) + (854775807 - bn); d > lim {
		d = lim
	}
	id := uint64(tn / 1000)
	if id <= st.hw || id >= 1<<53 {
		id = st.hw + 1
	}
	if id >= 1<<53 {
		id = 1
	}
	tk.ID, tk.PrevTop = id, st.top
	tk.Act, tk.End = offsetAt(bs, bn, act), offsetAt(bs, bn, d)
	return tk, true, true
}

// offsetAt is the instant at offset off (ns, integral) from the base (bs
// seconds, bn nanoseconds), saturating at the int64 range.
func offsetAt(bs, bn, off float64) int64 {
	base := int64(bs)*1e9 + int64(bn)
	switch {
	case off >= 1<<63:
		return math.MaxInt64
	case off <= -(1 << 63):
		return math.MinInt64
	}
	o := int64(off)
	if o > 0 && base > math.MaxInt64-o {
		return math.MaxInt64
	}
	if o < 0 && base < math.MinInt64-o {
		return math.MinInt64
	}
	return base + o
}

// Arguments boxed once.
var (
	noWait  any = int64(-1)
	keepAbs any = int64(keep)
	keepRel any = -int64(keep)
)

// keepArg tells a pair script how to expire the key for a call at t: at
// the state's own instant plus keep when t is within an hour of this
// host's clock (and so of Redis's), else keep after the state's time from
// now on Redis's clock (simulated time).
func keepArg(t time.Time) any { return keepFor(t, keepAbs, keepRel) }

// keepFor is abs when t is within an hour of this host's clock, else rel.
func keepFor(t time.Time, abs, rel any) any {
	if d := time.Since(t); d < time.Hour && d > -time.Hour {
		return abs
	}
	return rel
}

// Next implements [pairlimit.Store]: max(t, Due), reading only.
func (s *Store) Next(ctx context.Context, p pairlimit.Pair, t time.Time) (time.Time, error) {
	sec, nsec := secNs(t.UnixNano())
	v, err := s.runRO(ctx, "pair next", pairNext, s.pairKeys(p), sec, nsec)
	if s.fallback(err) {
		return s.local.Next(ctx, p, t)
	}
	if err != nil {
		return time.Time{}, err
	}
	if a := replyArray(v); len(a) == 3 {
		return time.Unix(0, fromBase(a, 0)), nil
	}
	return t, nil
}

// Cancel implements [pairlimit.Store]: State.Cancel in one script.
func (s *Store) Cancel(ctx context.Context, p pairlimit.Pair, t time.Time, tk pairlimit.Ticket) (bool, error) {
	if tk.ID == 0 {
		return false, nil
	}
	if tk.ID&localBit != 0 {
		if s.local == nil {
			return false, nil
		}
		return s.localCancel(ctx, p, t, tk)
	}
	sec, nsec := secNs(t.UnixNano())
	var pds, pdn any = "z", 0
	if tk.PrevDue > 0 {
		pds, pdn = secNs(tk.PrevDue)
	}
	as, an := secNs(tk.Act)
	es, en := secNs(tk.End)
	v, err := s.run(ctx, "pair cancel", pairCancel, s.pairKeys(p), sec, nsec, keepArg(time.Unix(0, max(t.UnixNano(), tk.Act))),
		strconv.FormatUint(tk.ID, 10), strconv.FormatUint(tk.PrevTop, 10), pds, pdn, as, an, es, en)
	if err != nil {
		return false, err
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// Refuse implements [pairlimit.Store]: State.Refuse in one script.
func (s *Store) Refuse(ctx context.Context, p pairlimit.Pair, t time.Time, holds []time.Duration, memory time.Duration) (time.Duration, error) {
	sec, nsec := secNs(t.UnixNano())
	args := []any{sec, nsec, keepArg(t), ns(max(memory, 0))}
	for _, h := range holds {
		args = append(args, ns(h))
	}
	v, err := s.run(ctx, "pair refuse", pairRefuse, s.pairKeys(p), args...)
	if s.fallback(err) {
		return s.local.Refuse(ctx, p, t, holds, memory)
	}
	if err != nil {
		return 0, err
	}
	i, _ := v.(int64)
	if i < 0 || i >= int64(len(holds)) {
		return 0, nil
	}
	return max(holds[i], 0), nil
}

// Accept implements [pairlimit.Store]: State.Accept in one script.
func (s *Store) Accept(ctx context.Context, p pairlimit.Pair, t time.Time) error {
	sec, nsec := secNs(t.UnixNano())
	_, err := s.run(ctx, "pair accept", pairAccept, s.pairKeys(p), sec, nsec, keepArg(t))
	if s.local != nil {
		_ = s.local.Accept(ctx, p, t) // reset a count the fallback may hold
		if errors.Is(err, ErrUnavailable) {
			return nil
		}
	}
	return err
}

// pairStateOf reads p's whole state (for tests).
func (s *Store) pairStateOf(ctx context.Context, p pairlimit.Pair) (pairlimit.State, error) {
	v, err := s.runRO(ctx, "pair state", pairState, s.pairKeys(p), 0, 0)
	if err != nil {
		return pairlimit.State{}, err
	}
	a := replyArray(v)
	base := replyInt(a, 0)*1e9 + replyInt(a, 1)
	var st pairlimit.State
	if replyStr(a, 2) != "z" {
		st.Due = base + replyInt(a, 2)
	}
	if replyStr(a, 3) != "z" {
		st.Hold = base + replyInt(a, 3)
	}
	st.Fails, st.Top = uint32(replyInt(a, 4)), replyUint(a, 5)
	return st, nil
}

// SkewAllowance is how long every key outlives the state it holds, on the
// server's clock, on top of what the state itself needs
// ([pairlimit.KeepAfterDue] for a pair): keys expire by PEXPIREAT at the
// instant their debt is repaid as the caller's clock tells it, and a
// caller whose clock runs behind Redis's by less than this still finds
// them.
const SkewAllowance = time.Minute

const keep = pairlimit.KeepAfterDue + SkewAllowance
