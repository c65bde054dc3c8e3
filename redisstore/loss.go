package redisstore

import (
	"context"
	"hash/maphash"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wapace/wapace/internal/sat"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

// Surviving a loss of Redis's state: see the package doc, "Losing
// Redis's state".

// DefaultLostStateDebt is how long after a loss of Redis's state the pairs
// Redis no longer holds are treated as owing, unless WithLostStateDebt
// says otherwise: the longest debt of pairlimit.Meta, a full burst of 45
// messages at 6 s each, plus pairlimit.DefaultMargin.
const DefaultLostStateDebt = time.Duration(45)*6*time.Second + pairlimit.DefaultMargin

// WithLostStateDebt sets how long after a loss of Redis's state (noticed
// through an epoch marker that has gone or changed) a pair that Redis
// holds no state for is treated as owing: the longest debt the limiters'
// policy can leave (Burst x Interval plus the margin). The default is
// DefaultLostStateDebt; a zero or negative d keeps it.
func WithLostStateDebt(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.lostDebt = d
		}
	}
}

// StateLoss reports that Redis lost the limits' state of one business
// number (or budget): its epoch marker had gone or changed. Every process
// sharing the Redis learns it on its next decision for that number.
type StateLoss struct {
	// Key is the business number's ID (or the budget's name).
	Key string
	// Since is when the marker was written again (the caller's instant):
	// the loss happened before it.
	Since time.Time
	// Until is when pairs Redis no longer holds stop being treated as
	// owing: Since plus the lost-state debt.
	Until time.Time
	// Noticed reports whether this process had seen the marker that was
	// lost; false when its first decision for the number found the new
	// marker already marked lost.
	Noticed bool
}

// WithObserver calls f once per process for each loss of Redis's state it
// notices or learns of (see StateLoss). f runs on the deciding goroutine
// and must not block.
func WithObserver(f func(StateLoss)) Option {
	return func(s *Store) { s.observe = f }
}

// WithLogger logs each loss of Redis's state the Store notices or learns
// of, at level Warn (nothing is logged by default).
func WithLogger(l *slog.Logger) Option {
	return func(s *Store) { s.log = l }
}

// marker is an epoch marker as the scripts write it: "<id> <sec> <ns>
// <lost>", the marker's ID, the caller's instant when it was written, and
// 1 once a process noticed that it replaced a lost one.
type marker struct {
	raw   string
	boxed any   // raw as a script argument
	since int64 // the instant it was written
	lost  bool
}

func parseMarker(raw string) marker {
	m := marker{raw: raw, boxed: raw}
	f := strings.Fields(raw)
	if len(f) != 4 {
		return m
	}
	sec, err1 := strconv.ParseInt(f[1], 10, 64)
	nsec, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || (f[3] != "0" && f[3] != "1") {
		return m
	}
	if sec < 0 || sec > math.MaxInt64/1_000_000_000-1 {
		return m
	}
	m.since = sec*1e9 + nsec
	m.lost = f[3] == "1"
	return m
}

// markers remembers the epoch marker last seen per key (business number or
// budget).
type markers struct {
	mu sync.RWMutex
	m  map[string]marker
}

func (ms *markers) get(key string) marker {
	ms.mu.RLock()
	m := ms.m[key]
	ms.mu.RUnlock()
	return m
}

// arg is the marker as a script argument, boxed once.
func (m marker) arg() any {
	if m.boxed != nil {
		return m.boxed
	}
	return ""
}

// markerKey is the epoch marker of key's hash slot.
func (s *Store) markerKey(key string) string { return s.prefix + "{" + key + "}:m" }

// learn records raw as key's marker, as a script answered it, and reports
// a loss the first time this process sees its marker marked lost.
func (s *Store) learn(key, raw string, noticed bool) marker {
	m := parseMarker(raw)
	s.markers.mu.Lock()
	if s.markers.m == nil {
		s.markers.m = make(map[string]marker)
	}
	old := s.markers.m[key]
	s.markers.m[key] = m
	s.markers.mu.Unlock()
	if m.lost && (!old.lost || old.since != m.since) {
		s.report(StateLoss{Key: key, Since: time.Unix(0, m.since),
			Until: time.Unix(0, sat.Add(m.since, int64(s.lostDebt))), Noticed: noticed && old.raw != ""})
	}
	return m
}

func (s *Store) report(ev StateLoss) {
	if s.observe != nil {
		s.observe(ev)
	}
	if s.log != nil && s.log.Enabled(context.Background(), slog.LevelWarn) {
		s.log.LogAttrs(context.Background(), slog.LevelWarn, "redisstore: redis lost the limits' state; pairs it no longer holds are treated as owing",
			slog.String("key", ev.Key), slog.Time("since", ev.Since), slog.Time("until", ev.Until), slog.Bool("noticed", ev.Noticed))
	}
}

// until returns, for a marker marked lost, the instant until which a pair
// Redis holds no state for is treated as owing: the marker's instant plus
// debt. It is 0 for a marker not marked lost.
func (m marker) until(debt time.Duration) int64 {
	if !m.lost {
		return 0
	}
	return sat.Add(m.since, int64(debt))
}

// shadow is a Store's bounded memory of the debts its own reservations
// left: per pair, the Due its latest reservation set. A give-back made in
// Redis sets it back to the Due the ticket found (which Redis had computed
// with this floor, so it holds this process's earlier debts). Entries go
// once their Due is KeepAfterDue past; beyond shadowMax entries in a
// shard, the earliest debts go first. Safe for concurrent use.
//
// A reservation takes its floor before its script runs, and the script
// lifts the pair to it whatever happened in between; so the shadow also
// keeps, per pair, what is in flight, and declines a give-back (Cancel
// reports false, as when a later reservation exists) that could make it
// hold more than Redis:
//   - while a reservation in flight took a floor above the Due the ticket
//     found: its script, run after the give-back, would lift the pair to
//     the debt just given back;
//   - while another give-back of the pair is in flight: the Due a ticket
//     found holds the debts of the tickets before it, which a give-back in
//     flight may be removing from Redis.
type shadow struct {
	shards [shadowShards]shadowShard
}

const (
	shadowShards = 64
	shadowMax    = 1 << 14 // per shard: about a million pairs in all
)

type shadowShard struct {
	mu     sync.Mutex
	m      map[pairlimit.Pair]int64  // the Due; protected by mu
	n      int                       // writes since the last sweep; protected by mu
	flying map[pairlimit.Pair]flight // what is in flight, while anything is; protected by mu
}

// flight is what is in flight on a pair.
type flight struct {
	floors []int64 // the floors reservations in flight took (a multiset)
	giving bool    // a give-back is in flight
}

var shadowSeed = maphash.MakeSeed()

func (sw *shadow) shard(p pairlimit.Pair) *shadowShard {
	return &sw.shards[maphash.Comparable(shadowSeed, p)%shadowShards]
}

// floor returns the Due this process's own reservations left p, or 0.
func (sw *shadow) floor(p pairlimit.Pair) int64 {
	sh := sw.shard(p)
	sh.mu.Lock()
	d := sh.m[p]
	sh.mu.Unlock()
	return d
}

// take returns p's floor for a reservation at tn, or 0 when there is none
// after tn. A reservation that took a floor hands it back to reserved
// once its script has answered or failed.
func (sw *shadow) take(p pairlimit.Pair, tn int64) int64 {
	sh := sw.shard(p)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	d := sh.m[p]
	if d <= tn {
		return 0
	}
	if sh.flying == nil {
		sh.flying = make(map[pairlimit.Pair]flight)
	}
	f := sh.flying[p]
	f.floors = append(f.floors, d)
	sh.flying[p] = f
	return d
}

// reserved ends a reservation on p that took the floor took (0 for none)
// and, if ok, left p owing until tk.End; now is an instant the caller
// knows to be past.
func (sw *shadow) reserved(p pairlimit.Pair, took int64, ok bool, tk pairstore.Ticket, now int64) {
	if took == 0 && !ok {
		return
	}
	sh := sw.shard(p)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if f, fly := sh.flying[p]; fly && took != 0 {
		if i := slices.Index(f.floors, took); i >= 0 {
			f.floors[i] = f.floors[len(f.floors)-1]
			f.floors = f.floors[:len(f.floors)-1]
		}
		sh.land(p, f)
	}
	if !ok {
		return
	}
	if sh.m == nil {
		sh.m = make(map[pairlimit.Pair]int64)
	}
	if tk.End > sh.m[p] {
		sh.m[p] = tk.End
	}
	if sh.n++; sh.n >= shadowMax/4 || len(sh.m) > shadowMax {
		sh.n = 0
		sh.sweep(now)
	}
}

// land stores f as what is in flight on p, or forgets p when f is
// nothing. Called with sh.mu held.
func (sh *shadowShard) land(p pairlimit.Pair, f flight) {
	if len(f.floors) == 0 && !f.giving {
		delete(sh.flying, p)
		return
	}
	sh.flying[p] = f
}

// giveBack is what givingBack did with a ticket.
type giveBack int

const (
	giveBackDeclined giveBack = iota // do not give the ticket back
	giveBackAsIs                     // the floor is not the ticket's: give back in Redis alone
	giveBackLowered                  // the floor was lowered to the Due the ticket found
)

// givingBack starts a give-back of tk on p, or declines it (see shadow).
// If tk's reservation set p's Due and none of this process's has raised
// it since, it lowers it to the Due tk found, before tk is given back in
// Redis, so that a reservation racing the give-back takes the lower floor
// (Redis decides it on its state, which holds tk until the give-back).
// Unless it declined, the caller reports the outcome to givenBack.
func (sw *shadow) givingBack(p pairlimit.Pair, tk pairstore.Ticket) giveBack {
	sh := sw.shard(p)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	f := sh.flying[p]
	if f.giving || slices.ContainsFunc(f.floors, func(d int64) bool { return d > tk.PrevDue }) {
		return giveBackDeclined
	}
	f.giving = true
	if sh.flying == nil {
		sh.flying = make(map[pairlimit.Pair]flight)
	}
	sh.flying[p] = f
	d, ok := sh.m[p]
	switch {
	case !ok || d != tk.End:
		return giveBackAsIs
	case tk.PrevDue > 0:
		sh.m[p] = tk.PrevDue
	default:
		delete(sh.m, p)
	}
	return giveBackLowered
}

// givenBack ends a give-back givingBack started: back reports whether
// Redis gave tk back. When it did not, a Due givingBack lowered is raised
// again.
func (sw *shadow) givenBack(p pairlimit.Pair, tk pairstore.Ticket, how giveBack, back bool) {
	sh := sw.shard(p)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if f, fly := sh.flying[p]; fly {
		f.giving = false
		sh.land(p, f)
	}
	if how != giveBackLowered || back {
		return
	}
	if sh.m == nil {
		sh.m = make(map[pairlimit.Pair]int64)
	}
	if tk.End > sh.m[p] {
		sh.m[p] = tk.End
	}
}

// sweep drops the debts repaid KeepAfterDue before now and, if the shard
// is still over its bound, the earliest ones (what is in flight is kept
// apart, and stays). Called with sh.mu held.
func (sh *shadowShard) sweep(now int64) {
	limit := sat.Sub(now, int64(pairstore.KeepAfterDue))
	for p, d := range sh.m {
		if d <= limit {
			delete(sh.m, p)
		}
	}
	if len(sh.m) <= shadowMax*3/4 {
		return
	}
	dues := make([]int64, 0, len(sh.m))
	for _, d := range sh.m {
		dues = append(dues, d)
	}
	slices.Sort(dues)
	cut := dues[len(dues)-shadowMax*3/4]
	for p, d := range sh.m {
		if d < cut {
			delete(sh.m, p)
		}
	}
}
