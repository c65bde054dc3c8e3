package redisstore

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// Pair state, one string per (number, recipient): nine numbers, packed
// with Redis's struct library as little-endian doubles (or, on servers
// without it, such as miniredis, written out in decimal): the base instant
// (bs seconds, bn nanoseconds), then pairstore.State as nanosecond offsets
// from it, d = Due and h = Hold, then top = Top, hw = the highest ID handed
// out, f = Fails, m = the memory of the last Refuse, and flags (1: d is
// set, 2: h is set; unset means zero). Offsets keep the scripts in plain
// Lua numbers (doubles, exact to 2^53 ns, about 104 days; the base moves
// to the instant of any call more than a day from it). IDs are the caller's instant in
// microseconds, or hw + 1 if that is not higher (below 2^53 until the year
// 2255, so exact as doubles); Cancel also checks Ticket.End, as
// pairstore.State.Cancel does. One GET reads a pair, one SET ... PXAT
// writes it with its expiry.
//
// Instants travel as two arguments, Unix seconds and nanoseconds, and come
// back as offsets from the base, which the Go side adds exactly (Reserve
// answers with the state it found, and the Go side replays its doubles:
// see reserveFrom). Offsets are exact below 2^53 ns; a Due saturates at
// the offset of the largest int64 instant, so that every reply stays
// within an int64 (Redis turns a Lua number of 2^63 or more into the
// smallest int64).
//
// The scripts run once per decision, so they are written for Redis's CPU:
// no closures, no number-to-string round trips, numbers passed to
// redis.call as numbers (Redis formats an integral double as an integer).

// newID is the next ID of a key whose highest yet is hw: the caller's
// instant in microseconds when that is higher, else hw + 1. Instants after
// 2255 (2^53 µs), which a double cannot count in microseconds, take hw + 1,
// so that IDs stay exact; an ID that would reach 2^53, where hw + 1 rounds
// back to hw, starts again from 1 (Cancel's Due check covers an ID that
// came round again, as for the memory store's 16-bit IDs).
const newID = `
local id = tsec * 1000000 + math.floor(tns / 1000)
if id <= hw or id >= 9007199254740992 then id = hw + 1 end
if id >= 9007199254740992 then id = 1 end
`

// pairLoad loads the state and the caller's instant as offsets.
const pairLoad = `
local key = KEYS[1]
local tsec, tns = tonumber(ARGV[1]), tonumber(ARGV[2])
local struct = rawget(_G, 'struct') -- absent from miniredis
local raw = redis.call('GET', key)
local bs, bn, d, h, top, hw, f, m, fl
if raw then
  if struct then
    bs, bn, d, h, top, hw, f, m, fl = struct.unpack('<ddddddddd', raw)
  else
    local a = {string.match(raw, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')}
    for i = 1, 9 do a[i] = tonumber(a[i]) end
    bs, bn, d, h, top, hw, f, m, fl = unpack(a)
  end
  if fl % 2 < 1 then d = nil end
  if fl % 4 < 2 then h = nil end
else
  bs, bn, top, hw, f, m = tsec, tns, 0, 0, 0, 0
end
local t = (tsec - bs) * 1000000000 + (tns - bn)
`

// pairSave writes the state, to expire at max(Due, Hold + memory) + |keep|:
// for keep >= 0 at that instant (SET PXAT: the caller's clock is close to
// the server's), for keep < 0 that long after now (SET PX: simulated time).
// It reads keep and the state's variables.
const pairSave = `
local fl, v = 0
if d then fl = 1 end
if h then fl = fl + 2 end
if struct then
  v = struct.pack('<ddddddddd', bs, bn, d or 0, h or 0, top, hw, f, m, fl)
else
  v = string.format('%d %d %d %d %d %d %d %d %d', bs, bn, d or 0, h or 0, top, hw, f, m, fl)
end
local u = d or t
if f > 0 and h and h + m > u then u = h + m end
if keep >= 0 then
  redis.call('SET', key, v, 'PXAT', bs * 1000 + math.ceil((bn + u + keep) / 1000000))
else
  redis.call('SET', key, v, 'PX', math.max(1, math.ceil((u - t - keep) / 1000000)))
end
`

// pairRebase, in Reserve and Refuse, moves the base to the call's instant
// when it lies more than a day away: offsets past 2^53 ns (104 days) lose
// nanoseconds, and those decisions write instants near their own. (Cancel,
// whose refunds pass 1970, Accept and the read-only scripts keep the
// stored base.)
const pairRebase = `
if t > 86400000000000 or t < -86400000000000 then
  if d then d = d - t end
  if h then h = h - t end
  bs, bn, t = tsec, tns, 0
end
`

// markerCheck, run only when Redis holds no state for the key at hand (a
// loss shows there first), compares the slot's epoch marker (KEYS[2]) with
// the one the caller knew (ARGV[KM], "" for none) and, when they differ,
// writes a marker where there is none and marks a replaced one lost (see
// loss.go). note then says to answer the marker, mk; and q is the end of a
// loss's quarantine as an offset from the base: the marker's instant plus
// ARGV[QA] when the marker says lost, or, without a difference, t plus the
// caller's offset ARGV[QO] ("" for none). It reads tsec, tns, t, bs, bn.
func markerCheck(km, qo, qa string) string {
	return strings.NewReplacer("KM", km, "QO", qo, "QA", qa).Replace(markerCheckLua)
}

const markerCheckLua = `
local known = ARGV[KM]
mk = redis.call('GET', KEYS[2])
if mk ~= known then
  note = true
  local id, cs, cn, l
  if mk then id, cs, cn, l = string.match(mk, '^(%S+) (%d+) (%d+) ([01])$') end
  if id then
    if l == '0' and known ~= '' then
      l = '1'
      mk = id .. ' ' .. cs .. ' ' .. cn .. ' 1'
      redis.call('SET', KEYS[2], mk)
    end
  else
    local tm = redis.call('TIME')
    cs, cn, l = string.format('%d', tsec), string.format('%d', tns), '0'
    if known ~= '' or mk then l = '1' end
    mk = tm[1] .. '.' .. tm[2] .. ' ' .. cs .. ' ' .. cn .. ' ' .. l
    redis.call('SET', KEYS[2], mk)
  end
  if l == '1' then q = (tonumber(cs) - bs) * 1000000000 + (tonumber(cn) + tonumber(ARGV[QA]) - bn) end
elseif ARGV[QO] ~= '' then
  q = t + tonumber(ARGV[QO])
end
`

// pairReserveLua is pairstore.Store.Reserve. KEYS: the pair, its number's
// epoch marker. ARGV: t (sec, ns), cost, maxWait (-1: none), keep (see
// pairSave), the marker the caller knew, the end of the quarantine it knew
// (an offset from t in ns, "" for none), the lost-state debt, and the
// caller's own floor of the pair's Due (an offset from t, "" for none; see
// loss.go). A pair without state during a loss's quarantine owes until its
// end; any pair owes at least the floor.
//
// It returns the pair's state as it found it (the packed string, empty for
// none) when it reserved, and that string in an array of one when it
// refused: the Go side takes the decision from the shape and derives the
// reservation by the script's own arithmetic (reserveFrom), floor and
// quarantine included: Redis answers with a string it already holds
// instead of building one. When it read a marker other than the caller's
// it answers {state, marker, 1 if reserved else 0}. Where the struct
// library is missing it returns {status, act, id, prevTop, prevDue} (and
// the marker when it differs): status 1 for reserved, plus 2 when there
// was a Due; act and prevDue as offsets from t. A Due saturates at the
// offset of the largest int64 instant, as State.Reserve's sum does.
var pairReserveLua = pairLoad + pairRebase + `
local state = raw or ''
` + pairLift + `
local act = t
if d and d > t then act = d end
local maxWait = tonumber(ARGV[4])
if maxWait >= 0 and act - t > maxWait then
  if struct then
    if note then return {state, mk, 0} end
    return {state}
  end
  if note then return {0, act - t, 0, 0, 0, mk} end
  return {0, act - t, 0, 0, 0}
end
local status, prevDue, prevTop = 1, 0, top
if d then status, prevDue = 3, d - t end
d = act + tonumber(ARGV[3])
local lim = (9223372036 - bs) * 1000000000 + (854775807 - bn)
if d > lim then d = lim end
` + newID + `
top, hw = id, id
local keep = tonumber(ARGV[5])
` + pairSave + `
if struct then
  if note then return {state, mk, 1} end
  return state
end
if note then return {status, act - t, id, prevTop, prevDue, mk} end
return {status, act - t, id, prevTop, prevDue}
`

// pairLift, in Reserve, checks the epoch marker for a pair without state
// and lifts the pair's Due to the quarantine's end (for a pair without
// state) and to the caller's floor (ARGV[9]), as the Go side's replay
// does.
var pairLift = `
local note, q, mk = false, nil, nil
if not raw then
` + markerCheck("6", "7", "8") + `
  if q and (not d or q > d) then d = q end
end
if ARGV[9] ~= '' then
  local fl = t + tonumber(ARGV[9])
  if not d or fl > d then d = fl end
end
`

// pairNextLua is pairstore.Store.Next: max(t, Due), changing nothing.
// ARGV: t (sec, ns). Returns {bs, bn, offset}, {} for t itself, or {0}
// when Redis holds no state for the pair (the Go side applies a loss's
// quarantine and its own floor).
const pairNextLua = pairLoad + `
if not raw then return {0} end
if not d or d < t then return {} end
local lim = (9223372036 - bs) * 1000000000 + (854775807 - bn)
if d > lim then d = lim end
return {bs, bn, d}
`

// pairCancelLua is pairstore.Store.Cancel. ARGV: t (sec, ns), keep, id,
// prevTop, prevDue (sec, ns; "z" for none), act (sec, ns), end (sec, ns).
// Returns 1 when it gave back.
const pairCancelLua = pairLoad + `
if not raw then return 0 end
local keep, id = tonumber(ARGV[3]), tonumber(ARGV[4])
local e = (tonumber(ARGV[8]) - bs) * 1000000000 + (tonumber(ARGV[9]) - bn)
if id == 0 or top ~= id or t > e then return 0 end
local want = (tonumber(ARGV[10]) - bs) * 1000000000 + (tonumber(ARGV[11]) - bn)
if h and h > want then want = h end
if not d or d ~= want then return 0 end
local pd = nil
if ARGV[6] ~= "z" then pd = (tonumber(ARGV[6]) - bs) * 1000000000 + (tonumber(ARGV[7]) - bn) end
if pd and h then d = math.max(pd, h) elseif pd then d = pd else d = h end
top = tonumber(ARGV[5])
-- expire relative to the later of t and the act: a refund passes t = 1970
if e > t then t = e end
` + pairSave + `
return 1
`

// pairRefuseLua is pairstore.Store.Refuse. ARGV: t (sec, ns), keep,
// memory, then the holds. Returns the index of the hold it applied (-1
// for none): the Go side reads the hold exactly from its own list, where a
// hold of 2^63 ns or more would come back as the smallest int64. Hold and
// Due saturate at the largest instant.
const pairRefuseLua = pairLoad + pairRebase + `
local keep = tonumber(ARGV[3])
m = tonumber(ARGV[4])
local hold, i = 0, -1
local nh = #ARGV - 4
if nh > 0 then
  i = math.min(f, nh - 1)
  hold = math.max(tonumber(ARGV[5 + i]), 0)
end
local lim = (9223372036 - bs) * 1000000000 + (854775807 - bn)
h = math.min(math.max(h or t + hold, t + hold), lim)
d = math.max(d or h, h)
if f < 4294967295 then f = f + 1 end
` + pairSave + `
return i
`

// pairAcceptLua is pairstore.Store.Accept: Fails returns to zero. ARGV:
// t (sec, ns), keep.
const pairAcceptLua = pairLoad + `
if not raw or f == 0 then return 1 end
f = 0
local keep = tonumber(ARGV[3])
` + pairSave + `
return 1
`

// pairStateLua reads the whole state, for tests: {bs, bn, d, h, f, top},
// "z" for an unset instant.
const pairStateLua = pairLoad + `
if not raw then return {"0", "0", "z", "z", "0", "0"} end
local ds, hs = "z", "z"
if d then ds = string.format('%d', d) end
if h then hs = string.format('%d', h) end
return {string.format('%d', bs), string.format('%d', bn), ds, hs, string.format('%d', f), string.format('%d', top)}
`

// Bucket state, one hash per key, holding throughputstore.BucketState as
// offsets from a base instant (bs, bn) like a pair's: tat = TAT, hold =
// Hold (absent: zero, a full bucket and no hold), top = Top, hw = the
// highest ID handed out, iv = Interval (absent: zero). IDs are Redis's
// clock in microseconds, or hw + 1 if that is not higher. The expiry is
// decided as a pair's (the caller tells whether its instant is near the
// real clock), so a reservation makes four calls (HMGET, TIME, HSET,
// PEXPIREAT) and a cancel or a hold three, instead of five and four.

const bucketLoad = `
local key = KEYS[1]
local tsec, tns = tonumber(ARGV[1]), tonumber(ARGV[2])
local st = redis.call('HMGET', key, 'bs', 'bn', 'tat', 'hold', 'top', 'hw', 'iv')
local bs, bn = tonumber(st[1]), tonumber(st[2])
local found = bs ~= nil
if not found then bs, bn = tsec, tns end
local t = (tsec - bs) * 1000000000 + (tns - bn)
local tat, hold, top, hw = tonumber(st[3]), tonumber(st[4]), tonumber(st[5]) or 0, tonumber(st[6]) or 0
local iv = tonumber(st[7])
local hadTat = tat ~= nil
`

// bucketSave writes the state and expires the key keep after max(TAT,
// Hold): for keep >= 0 at that instant (PEXPIREAT: the caller's clock is
// close to the server's), for keep < 0 that long after now (PEXPIRE:
// simulated time), as a pair's. It reads keep and the state's variables.
const bucketSave = `
if hadTat and not tat then redis.call('HDEL', key, 'tat') end
local fields = {'bs', bs, 'bn', bn, 'top', top, 'hw', hw}
if tat then fields[#fields + 1] = 'tat'; fields[#fields + 1] = tat end
if hold then fields[#fields + 1] = 'hold'; fields[#fields + 1] = hold end
if iv then fields[#fields + 1] = 'iv'; fields[#fields + 1] = iv end
redis.call('HSET', key, unpack(fields))
local u, uh = tat or t, hold or t
if uh > u then u = uh end
if keep >= 0 then
  redis.call('PEXPIREAT', key, bs * 1000 + math.ceil((bn + u + keep) / 1000000))
else
  redis.call('PEXPIRE', key, math.ceil((u - t - keep) / 1000000))
end
`

// bucketReserveLua is throughputstore.Store.Reserve. KEYS: the bucket, its
// epoch marker. ARGV: t (sec, ns), n, interval, burst, maxWait (-1: none),
// keep (see bucketSave), the marker the caller knew, the instant a loss's
// marker was written (an offset from t, "" for none), 0. A bucket Redis lost, asked
// for in a loss's quarantine, starts as spent at the marker's instant, so
// that a second's count is not doubled. Returns {ok, bs, bn, act, id,
// prevTop, prevTAT or "z"}, instants as offsets from (bs, bn), and the
// marker when it differs from the caller's.
var bucketReserveLua = bucketLoad + `
local n, interval, burst = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local maxWait, keep = tonumber(ARGV[6]), tonumber(ARGV[7])
if t > 86400000000000 or t < -86400000000000 then
  -- move the base to t: offsets past 2^53 ns (104 days) lose nanoseconds
  if tat then tat = tat - t end
  if hold then hold = hold - t end
  bs, bn, t = tsec, tns, 0
end
local note, q, mk = false, nil, nil
if not found then
` + markerCheck("8", "9", "10") + `
  if q then
    q = q + burst * interval
    if not tat or q > tat then tat = q end
  end
end
-- restate TAT for a slower interval (throughputstore.BucketState.Reserve)
if iv and iv > 0 and interval > iv and tat and tat > t then
  local e = tat - burst * iv
  local ref = math.max(math.min(t, e), e - burst * iv)
  tat = ref + math.floor((tat - ref) * interval / iv)
end
local u = math.max(t, hold or t)
local base = math.max(tat or u, u)
local act = math.max(u, base + (n - burst) * interval)
-- instants saturate at the largest int64 (Redis answers a Lua number of
-- 2^63 or more as the smallest)
local lim = (9223372036 - bs) * 1000000000 + (854775807 - bn)
if act > lim then act = lim end
local prevTat, prevTop = "z", top
if tat then prevTat = math.min(tat, lim) end
if n < 1 or n > burst or (maxWait >= 0 and act - t > maxWait) then
  if note then return {0, bs, bn, act, 0, prevTop, prevTat, mk} end
  return {0, bs, bn, act, 0, prevTop, prevTat}
end
tat = math.min(base + n * interval, lim)
iv = interval
local tm = redis.call('TIME')
local id = math.max(tonumber(tm[1]) * 1000000 + tonumber(tm[2]), hw + 1)
top, hw = id, id
` + bucketSave + `
if note then return {1, bs, bn, act, top, prevTop, prevTat, mk} end
return {1, bs, bn, act, top, prevTop, prevTat}
`

// bucketCancelLua is throughputstore.Store.Cancel. ARGV: t (sec, ns), keep, id,
// prevTop, prevTAT (sec, ns; "z" for none), act (sec, ns).
const bucketCancelLua = bucketLoad + `
if not found then return 0 end
local keep, id = tonumber(ARGV[3]), tonumber(ARGV[4])
if id == 0 or top ~= id or t > (tonumber(ARGV[8]) - bs) * 1000000000 + (tonumber(ARGV[9]) - bn) then return 0 end
if ARGV[6] == "z" then tat = nil else tat = (tonumber(ARGV[6]) - bs) * 1000000000 + (tonumber(ARGV[7]) - bn) end
top = tonumber(ARGV[5])
` + bucketSave + `
return 1
`

// bucketHoldLua is throughputstore.Store.Hold. ARGV: until (sec, ns), keep.
// Returns {bs, bn, hold}.
const bucketHoldLua = bucketLoad + `
hold = math.max(hold or t, t)
local keep = tonumber(ARGV[3])
` + bucketSave + `
return {bs, bn, hold}
`

// Tier state: KEYS[1] a sorted set of recipient keys scored by the offset
// in ns of their latest admission from an epoch, KEYS[2] a hash holding the
// epoch (sec under "s", ns under "n"). Offsets stay exact in doubles; the
// epoch moves forward, rescoring the live members, once offsets pass 30
// days. A recipient counts while its instant is later than t - window.

const tierPrelude = `
local E9 = 1000000000
local tsec, tns = tonumber(ARGV[1]), tonumber(ARGV[2])
local ep = redis.call('HMGET', KEYS[2], 's', 'n')
local es, en = tonumber(ep[1]), tonumber(ep[2])
-- tierExpire expires both keys keep after the newest count leaves the
-- window; tm is Redis's TIME, read once by the claim.
local function tierExpire(window, keep, tm)
  local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if not top[2] then return end
  local u = tonumber(top[2]) + window
  local t = (tsec - es) * E9 + (tns - en)
  local sec = tonumber(tm[1])
  local ms
  if math.abs(tsec - sec) > 3600 then
    ms = sec * 1000 + math.floor(tonumber(tm[2]) / 1000) + math.ceil((u - t) / 1000000)
  else
    ms = es * 1000 + math.ceil((en + u) / 1000000)
  end
  ms = ms + math.ceil(keep / 1000000)
  redis.call('PEXPIREAT', KEYS[1], ms)
  redis.call('PEXPIREAT', KEYS[2], ms)
end
`

// tierClaimLua is throughputstore.Store.Claim. ARGV: t (sec, ns), to, limit,
// window, keep, skew. Returns {ok, es, en, at or retryAt offset, new}.
// Counts are dropped only once expired at the present: the earlier of t and
// Redis's clock less skew, so that a claim at a future instant never drops
// a count still live for callers at the present; the decision counts the
// recipients live at t.
const tierClaimLua = tierPrelude + `
local to, limit, window, keep, skew = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
if not es then
  es, en = tsec, tns
  redis.call('HSET', KEYS[2], 's', es, 'n', en)
end
local t = (tsec - es) * E9 + (tns - en)
local tm = redis.call('TIME')
-- 1 us to spare for doubles far from the epoch
local now = (tonumber(tm[1]) - es) * E9 + (tonumber(tm[2]) * 1000 - en) - skew - 1000
local function prune()
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', math.min(t, now) - window))
end
if t > 30 * 86400 * E9 then
  local nes, nen = tsec, tns
  prune()
  local all = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  for i = 1, #all, 2 do
    redis.call('ZADD', KEYS[1], string.format('%d', tonumber(all[i + 1]) - t), all[i])
  end
  redis.call('HSET', KEYS[2], 's', nes, 'n', nen)
  now = now - t
  es, en, t = nes, nen, 0
end
local from = t - window
local cur = redis.call('ZSCORE', KEYS[1], to)
if cur and tonumber(cur) > from then
  local at = math.max(tonumber(cur), t)
  if at ~= tonumber(cur) then redis.call('ZADD', KEYS[1], string.format('%d', at), to) end
  tierExpire(window, keep, tm)
  return {1, es, en, string.format('%d', at), 0}
end
if limit > 0 then
  prune()
  local f = '(' .. string.format('%d', from)
  local n = redis.call('ZCOUNT', KEYS[1], f, '+inf')
  if n < limit then
    redis.call('ZADD', KEYS[1], string.format('%d', t), to)
    tierExpire(window, keep, tm)
    return {1, es, en, string.format('%d', t), 1}
  end
  local old = redis.call('ZRANGEBYSCORE', KEYS[1], f, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  return {0, es, en, string.format('%d', tonumber(old[2]) + window), 0}
end
return {0, es, en, string.format('%d', t + window), 0}
`

// tierReleaseLua is throughputstore.Store.Release. ARGV: to, at (sec, ns), new.
const tierReleaseLua = `
if ARGV[4] ~= "1" then return 0 end
local ep = redis.call('HMGET', KEYS[2], 's', 'n')
if not ep[1] then return 0 end
local at = (tonumber(ARGV[2]) - tonumber(ep[1])) * 1000000000 + (tonumber(ARGV[3]) - tonumber(ep[2]))
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not cur or tonumber(cur) ~= at then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
`

// tierCountLua is throughputstore.Store.Count. ARGV: t (sec, ns), window.
const tierCountLua = `
local ep = redis.call('HMGET', KEYS[2], 's', 'n')
if not ep[1] then return 0 end
local t = (tonumber(ARGV[1]) - tonumber(ep[1])) * 1000000000 + (tonumber(ARGV[2]) - tonumber(ep[2]))
return redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%d', t - tonumber(ARGV[3])), '+inf')
`

var (
	pairReserve   = redis.NewScript(pairReserveLua)
	pairNext      = redis.NewScript(pairNextLua)
	pairCancel    = redis.NewScript(pairCancelLua)
	pairRefuse    = redis.NewScript(pairRefuseLua)
	pairAccept    = redis.NewScript(pairAcceptLua)
	pairState     = redis.NewScript(pairStateLua)
	bucketReserve = redis.NewScript(bucketReserveLua)
	bucketCancel  = redis.NewScript(bucketCancelLua)
	bucketHold    = redis.NewScript(bucketHoldLua)
	tierClaim     = redis.NewScript(tierClaimLua)
	tierRelease   = redis.NewScript(tierReleaseLua)
	tierCount     = redis.NewScript(tierCountLua)
)
