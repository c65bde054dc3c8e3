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
	"github.com/wapace/wapace/pairlimit/pairstore"
)

var _ pairstore.Store = (*Store)(nil)

// pairKey is the pair's key, in its number's hash slot:
// prefix{from}:p:to.
func (s *Store) pairKey(p pairstore.Pair) string {
	return s.prefix + "{" + p.From() + "}:p:" + p.To()
}

// pairKeys is pairKey as the keys of a script.
func (s *Store) pairKeys(p pairstore.Pair) []string { return []string{s.pairKey(p)} }

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

// Reserve implements [pairstore.Store]: State.Reserve in one script, with
// the pair's Due lifted to this Store's own floor for it and, after a loss
// of Redis's state, to the loss's quarantine (see StateLoss).
func (s *Store) Reserve(ctx context.Context, sp pairstore.Pair, t time.Time, cost, maxWait time.Duration) (pairstore.Ticket, bool, error) {
	p, err := asPair(sp)
	if err != nil {
		return pairstore.Ticket{}, false, err
	}
	wait := noWait
	if maxWait < pairlimit.InfDuration {
		wait = int64(max(maxWait, 0))
	}
	tn := max(t.UnixNano(), 0)
	num := p.From()
	mk := s.markers.get(num)
	var lf lift
	var qo, fo any = "", ""
	if until := mk.until(s.lostDebt); until > tn {
		lf.qoff, lf.hasQ = until-tn, true
		qo = lf.qoff
	}
	floor := s.shadow.take(p, tn)
	if floor > tn {
		lf.floff, lf.hasFloor = floor-tn, true
		fo = lf.floff
	}
	if s.pause != nil {
		s.pause("reserve", p)
	}
	v, err := s.runKeys(ctx, "pair reserve", pairReserveHot, twoKeysArg,
		[]any{3: s.prefix + "{" + num + "}:p:" + p.To(), 4: s.markerKey(num), 5: tn / 1e9, 6: tn % 1e9,
			7: int64(max(cost, 0)), 8: wait, 9: keepArg(t), 10: mk.arg(), 11: qo, 12: s.lostDebtArg, 13: fo})
	if s.fallback(err) {
		s.shadow.reserved(p, floor, false, pairstore.Ticket{}, 0)
		return s.localReserve(ctx, p, t, cost, maxWait)
	}
	if err != nil {
		s.shadow.reserved(p, floor, false, pairstore.Ticket{}, 0)
		return pairstore.Ticket{}, false, err
	}
	if raw, ok := markerOf(v); ok { // another marker: learn it, and lift as the script did
		mk = s.learn(num, raw, mk.raw != "")
		v = stripMarker(v)
		lf.hasQ, lf.note = false, mk.lost
		if mk.lost {
			lf.qs, lf.qn = quarantineOf(mk, s.lostDebt)
		}
	}
	tk, ok, shape := reserveWith(v, tn, cost, maxWait, lf)
	if !shape {
		s.shadow.reserved(p, floor, false, pairstore.Ticket{}, 0)
		return pairstore.Ticket{}, false, &UnavailableError{Op: "pair reserve", Err: errReply}
	}
	s.shadow.reserved(p, floor, ok, tk, min(tn, time.Now().UnixNano()))
	return tk, ok, nil
}

var pairReserveHot = newHotScript(pairReserve, pairReserveLua)

// errReply reports a script answer of the wrong shape (a key written by
// something else, or a script of another version).
var errReply = errors.New("unexpected script reply")

// markerOf returns the epoch marker a reserve script answered beside its
// decision, when it differed from the caller's: {state, marker, reserved}
// with the struct library, {status, act, id, prevTop, prevDue, marker}
// without.
func markerOf(v any) (string, bool) {
	a, ok := v.([]any)
	if !ok {
		return "", false
	}
	var m any
	switch len(a) {
	case 3:
		m = a[1]
	case 6:
		m = a[5]
	default:
		return "", false
	}
	raw, ok := m.(string)
	return raw, ok
}

// stripMarker is v without the marker markerOf found: the answer the
// script gives when the marker is the caller's.
func stripMarker(v any) any {
	a := v.([]any)
	if len(a) == 6 {
		return a[:5]
	}
	if n, _ := a[2].(int64); n == 1 {
		return a[0]
	}
	return a[:1]
}

// quarantineOf is the end of m's quarantine as the script computes it:
// seconds and nanoseconds (which may exceed 1e9) of the marker's instant
// plus the lost-state debt.
func quarantineOf(m marker, debt time.Duration) (qs, qn float64) {
	s, n := secNs(m.since)
	return float64(s), float64(n + int64(debt))
}

// lift is what a reserve script raises the pair's Due to besides its
// state: the caller's floor and, for a pair without state, the end of a
// loss's quarantine, either known to the caller (an offset from t) or read
// by the script from a marker the caller did not know (seconds and
// nanoseconds, which may exceed 1e9).
type lift struct {
	floff, qoff    int64
	hasFloor, hasQ bool
	qs, qn         float64
	note           bool
}

// apply raises the Due d (an offset from the base bs, bn, as is t; has
// reports whether there is one) as the script does, on the same doubles;
// stateless reports whether Redis held no state for the pair.
func (l lift) apply(bs, bn, t, d float64, has, stateless bool) (float64, bool) {
	if stateless {
		q, ok := 0.0, false
		switch {
		case l.note:
			q, ok = float64((l.qs-bs)*1e9)+(l.qn-bn), true
		case l.hasQ:
			q, ok = t+float64(l.qoff), true
		}
		if ok && (!has || q > d) {
			d, has = q, true
		}
	}
	if l.hasFloor {
		if f := t + float64(l.floff); !has || f > d {
			d, has = f, true
		}
	}
	return d, has
}

// reserveFrom is reserveWith without a lift.
func reserveFrom(v any, tn int64, cost, maxWait time.Duration) (tk pairstore.Ticket, ok, shape bool) {
	return reserveWith(v, tn, cost, maxWait, lift{})
}

// reserveWith turns pairReserveLua's answer v to a call at tn into the
// reservation and whether it was made. The script answers with the pair's
// state as it found it: alone when it reserved, in an array of one when it
// refused, so that the decision is the script's own. From that state and
// the lift the script applied, the Go side replays the script's arithmetic
// on the same doubles (the base's move, the lift, act = max(t, Due), Due =
// act + cost saturating at the largest instant, the ID rule of newID):
// within 2^53 ns of the base that is pairstore.State.Reserve exactly, and
// beyond it (debts or instants more than 104 days apart) it still names
// the Due the script stored. From the script's own five integers
// (miniredis) it reads them. shape reports whether v was either.
func reserveWith(v any, tn int64, cost, maxWait time.Duration, lf lift) (tk pairstore.Ticket, ok, shape bool) {
	switch x := v.(type) {
	case string:
		return replayReserve(x, tn, cost, lf)
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
			switch {
			case raw != "":
			case lf.note:
				act = max(act, offsetAt(lf.qs, lf.qn, 0))
			case lf.hasQ:
				act = max(act, sat.Add(tn, lf.qoff))
			}
			if lf.hasFloor {
				act = max(act, sat.Add(tn, lf.floff))
			}
			return pairstore.Ticket{Act: act}, false, true
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
func replayReserve(raw string, tn int64, cost time.Duration, lf lift) (tk pairstore.Ticket, ok, shape bool) {
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
	lifted, has := lf.apply(bs, bn, t, d, st.hasDue, len(raw) == 0)
	if has && (!st.hasDue || lifted != d) {
		tk.PrevDue = offsetAt(bs, bn, lifted) // the Due the lift set
	}
	d = lifted
	act := t
	if has && d > t {
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

// Next implements [pairstore.Store]: max(t, Due), reading only.
func (s *Store) Next(ctx context.Context, sp pairstore.Pair, t time.Time) (time.Time, error) {
	p, err := asPair(sp)
	if err != nil {
		return time.Time{}, err
	}
	sec, nsec := secNs(t.UnixNano())
	v, err := s.runRO(ctx, "pair next", pairNext, s.pairKeys(p), sec, nsec)
	if s.fallback(err) {
		return s.local.Next(ctx, p, t)
	}
	if err != nil {
		return time.Time{}, err
	}
	at := t.UnixNano()
	switch a := replyArray(v); len(a) {
	case 3:
		at = max(at, fromBase(a, 0))
	case 1: // no state: a loss's quarantine may apply
		if mk := s.markers.get(p.From()); mk.lost {
			at = max(at, mk.until(s.lostDebt))
		}
	}
	if f := s.shadow.floor(p); f > at {
		at = f
	}
	if at == t.UnixNano() {
		return t, nil
	}
	return time.Unix(0, at), nil
}

// Cancel implements [pairstore.Store]: State.Cancel in one script. It
// also reports false, giving nothing back, while this Store has another
// give-back of the pair in flight, or a reservation of it whose floor
// (see StateLoss) lies above the Due tk found: the two overlap, and the
// other goes first, as a later reservation would.
func (s *Store) Cancel(ctx context.Context, sp pairstore.Pair, t time.Time, tk pairstore.Ticket) (bool, error) {
	p, err := asPair(sp)
	if err != nil {
		return false, err
	}
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
	how := s.shadow.givingBack(p, tk)
	if how == giveBackDeclined {
		return false, nil
	}
	if s.pause != nil {
		s.pause("cancel", p)
	}
	v, err := s.run(ctx, "pair cancel", pairCancel, s.pairKeys(p), sec, nsec, keepArg(time.Unix(0, max(t.UnixNano(), tk.Act))),
		strconv.FormatUint(tk.ID, 10), strconv.FormatUint(tk.PrevTop, 10), pds, pdn, as, an, es, en)
	n, _ := v.(int64)
	s.shadow.givenBack(p, tk, how, err == nil && n == 1)
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// Refuse implements [pairstore.Store]: State.Refuse in one script.
func (s *Store) Refuse(ctx context.Context, p pairstore.Pair, t time.Time, holds []time.Duration, memory time.Duration) (time.Duration, error) {
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

// Accept implements [pairstore.Store]: State.Accept in one script.
func (s *Store) Accept(ctx context.Context, p pairstore.Pair, t time.Time) error {
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

// asPair returns the pairlimit.Pair behind a pairstore.Pair: itself when
// it is one (a pair limiter always passes its own), or parsed again from
// its strings. The zero Pair is refused: it names no pair.
func asPair(sp pairstore.Pair) (pairlimit.Pair, error) {
	p, ok := sp.(pairlimit.Pair)
	if !ok {
		var err error
		if p, err = pairlimit.NewPair(sp.From(), sp.To()); err != nil {
			return pairlimit.Pair{}, err
		}
	}
	if p.IsZero() {
		return pairlimit.Pair{}, pairlimit.ErrZeroPair
	}
	return p, nil
}

// pairStateOf reads p's whole state (for tests).
func (s *Store) pairStateOf(ctx context.Context, p pairlimit.Pair) (pairstore.State, error) {
	v, err := s.runRO(ctx, "pair state", pairState, s.pairKeys(p), 0, 0)
	if err != nil {
		return pairstore.State{}, err
	}
	a := replyArray(v)
	base := replyInt(a, 0)*1e9 + replyInt(a, 1)
	var st pairstore.State
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
// ([pairstore.KeepAfterDue] for a pair): keys expire by PEXPIREAT at the
// instant their debt is repaid as the caller's clock tells it, and a
// caller whose clock runs behind Redis's by less than this still finds
// them.
const SkewAllowance = time.Minute

const keep = pairstore.KeepAfterDue + SkewAllowance
