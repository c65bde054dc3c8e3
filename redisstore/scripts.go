package redisstore

import "github.com/redis/go-redis/v9"

// Pair state, one hash per (number, recipient): d = due (when the debt is
// repaid), s = sequence of the last change, f = consecutive 131056 answers.
// An absent d owes nothing.

// pairReserveLua reserves n messages at t. ARGV: t, n, interval, margin,
// allowOnly (1: refuse rather than schedule later), slack, penaltyMemory.
// Returns {ok, act, seq, prevDue, due}.
const pairReserveLua = luaPrelude + `
local key = KEYS[1]
local t, n, interval, margin = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local allowOnly, slack, memory = ARGV[5] == "1", tonumber(ARGV[6]), tonumber(ARGV[7])
local st = redis.call('HMGET', key, 'd', 'f')
local prev = st[1] or ""
local fails = tonumber(st[2] or "0")
local act = later(t, prev)
if allowOnly and act ~= t then
  return {0, act, 0, prev, prev}
end
local due = add(act, n * interval + margin)
local seq = redis.call('HINCRBY', key, 's', 1)
redis.call('HSET', key, 'd', due)
local untilAt = due
if fails > 0 then untilAt = add(due, memory) end
expire(key, t, untilAt, slack)
return {1, act, seq, prev, due}
`

// pairGiveBackLua restores the due a reservation replaced, if nothing
// changed the pair since. ARGV: t, act, seq, prevDue, due, checkTime (1:
// only if t <= act).
const pairGiveBackLua = luaPrelude + `
local key = KEYS[1]
local t, act, seq, prev, due = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if ARGV[6] == "1" and diff(t, act) > 0 then return 0 end
local st = redis.call('HMGET', key, 'd', 's')
if st[1] ~= due or st[2] ~= seq then return 0 end
redis.call('HINCRBY', key, 's', 1)
if prev == "" then
  redis.call('HDEL', key, 'd')
else
  redis.call('HSET', key, 'd', prev)
end
return 1
`

// pairRefusedLua applies a 131056 hold at t. ARGV: t, slack,
// penaltyMemory, then the holds for 0, 1, 2, ... earlier consecutive
// refusals (the last repeats). Returns the hold in ns.
const pairRefusedLua = luaPrelude + `
local key = KEYS[1]
local t, slack, memory = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local st = redis.call('HMGET', key, 'd', 'f')
local fails = tonumber(st[2] or "0")
local idx = math.min(fails + 4, #ARGV)
local hold = tonumber(ARGV[idx])
local due = later(st[1] or "", add(t, hold))
redis.call('HSET', key, 'd', due, 'f', fails + 1)
redis.call('HINCRBY', key, 's', 1)
expire(key, t, add(due, memory), slack)
return hold
`

// pairAcceptedLua resets the count of consecutive 131056 answers.
const pairAcceptedLua = `
redis.call('HDEL', KEYS[1], 'f')
if redis.call('HEXISTS', KEYS[1], 'd') == 0 then redis.call('DEL', KEYS[1]) end
return 1
`

// pairDueLua reads a pair's due, changing nothing: {due or ""}.
const pairDueLua = `
local d = redis.call('HGET', KEYS[1], 'd')
if not d then return "" end
return d
`

// Bucket state, one hash per business number or budget: tat = theoretical
// arrival time (the bucket is full at or after it), hold = nothing is
// admitted before it, fac = fraction of the rate in use (absent: 1),
// chg = when fac last changed, c1/c2 = consecutive refusals of two kinds.

// bucketPrelude computes the emission interval after recovering the rate
// factor at t. Needs key, t, emission (at factor 1), recover step, recover
// interval in scope.
const bucketPrelude = luaPrelude + `
local function state(key)
  local st = redis.call('HMGET', key, 'tat', 'hold', 'fac', 'chg')
  return st[1] or "", st[2] or "", tonumber(st[3] or "1"), st[4] or ""
end
-- rescale moves tat so that the tokens at t stay the same when the
-- emission interval changes from e0 to e1.
local function rescale(t, tat, e0, e1)
  if tat == "" then return "" end
  local off = diff(tat, t)
  if off <= 0 then return tat end
  return add(t, math.ceil(off * e1 / e0))
end
local function recover(key, t, tat, fac, chg, e, step, every)
  if fac >= 1 or chg == "" then return tat, fac end
  local steps = math.floor(diff(t, chg) / every)
  if steps <= 0 then return tat, fac end
  local nf = math.min(1, fac + steps * step)
  tat = rescale(t, tat, e / fac, e / nf)
  redis.call('HSET', key, 'fac', nf, 'chg', add(chg, steps * every))
  if tat ~= "" then redis.call('HSET', key, 'tat', tat) end
  return tat, nf
end
`

// bucketReserveLua reserves n tokens at t. ARGV: t, n, emission ns at
// factor 1, burst, allowOnly, slack, recover step, recover every (ns).
// Returns {ok, act, tat after, tat before}.
const bucketReserveLua = bucketPrelude + `
local key = KEYS[1]
local t, n, e, b = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local allowOnly, slack = ARGV[5] == "1", tonumber(ARGV[6])
local tat, hold, fac, chg = state(key)
tat, fac = recover(key, t, tat, fac, chg, e, tonumber(ARGV[7]), tonumber(ARGV[8]))
local ef = e / fac
if n > b then return {0, "", "", tat} end
local start = 0
if hold ~= "" then start = math.max(0, diff(hold, t)) end
local base = start
if tat ~= "" then base = math.max(base, diff(tat, t)) end
local newTat = base + n * ef
local act = math.max(start, newTat - b * ef)
if allowOnly and act > 0 then return {0, add(t, math.ceil(act)), "", tat} end
local nt = add(t, math.ceil(newTat))
redis.call('HSET', key, 'tat', nt)
expire(key, t, later(nt, hold), slack)
return {1, add(t, math.ceil(act)), nt, tat}
`

// bucketCancelLua gives back a reservation's tokens, less those reserved
// after it (as rate.Reservation.CancelAt does). ARGV: t, act, tat after the
// reservation, n, emission at factor 1, checkTime.
const bucketCancelLua = bucketPrelude + `
local key = KEYS[1]
local t, act, rtat, n, e = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
if ARGV[6] == "1" and diff(t, act) > 0 then return 0 end
local tat, hold, fac = state(key)
if tat == "" then return 0 end
local later_used = math.max(0, diff(tat, rtat))
local restore = n * (e / fac) - later_used
if restore <= 0 then return 0 end
redis.call('HSET', key, 'tat', add(tat, -math.floor(restore)))
return 1
`

// bucketRefusedLua holds the bucket after a refusal at t. ARGV: t, slack,
// counter field ("c1" or "c2"), other counter field to leave, cut (the
// factor multiplier, 1 for none), min factor, emission, then the holds for
// 0, 1, 2, ... earlier consecutive refusals. Returns the hold in ns.
const bucketRefusedLua = bucketPrelude + `
local key = KEYS[1]
local t, slack, field, cut, minf, e = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local count = tonumber(redis.call('HGET', key, field) or "0")
local idx = math.min(count + 8, #ARGV)
local hold = tonumber(ARGV[idx])
redis.call('HSET', key, field, count + 1)
local tat, oldHold, fac = state(key)
if cut < 1 then
  local nf = math.max(fac * cut, minf)
  tat = rescale(t, tat, e / fac, e / nf)
  if tat ~= "" then redis.call('HSET', key, 'tat', tat) end
  redis.call('HSET', key, 'fac', nf, 'chg', t)
end
local h = later(oldHold, add(t, hold))
redis.call('HSET', key, 'hold', h)
expire(key, t, later(later(tat, h), add(h, 600 * E9)), slack)
return hold
`

// bucketAcceptedLua resets the counts of consecutive refusals.
const bucketAcceptedLua = `
redis.call('HDEL', KEYS[1], 'c1', 'c2')
return 1
`

// bucketStateLua reads {tat, hold, fac}, changing nothing.
const bucketStateLua = `
local st = redis.call('HMGET', KEYS[1], 'tat', 'hold', 'fac')
return {st[1] or "", st[2] or "", st[3] or "1"}
`

// Tier state: KEYS[1] a sorted set of recipients scored by the offset in
// ns of their latest admission from an epoch, KEYS[2] a hash holding the
// epoch (an instant) under "e". Offsets stay exact in doubles; the epoch
// is moved forward (rescoring the live members) once offsets pass 50 days.

const tierPrelude = luaPrelude + `
local function epoch(keys, t, window)
  local e = redis.call('HGET', keys[2], 'e')
  if not e then
    e = t
    redis.call('HSET', keys[2], 'e', e)
    return e
  end
  local off = diff(t, e)
  if off > 50 * 86400 * E9 then
    local ne = add(t, -2 * window)
    local shift = diff(ne, e)
    redis.call('ZREMRANGEBYSCORE', keys[1], '-inf', shift)
    local all = redis.call('ZRANGE', keys[1], 0, -1, 'WITHSCORES')
    for i = 1, #all, 2 do
      redis.call('ZADD', keys[1], tonumber(all[i + 1]) - shift, all[i])
    end
    redis.call('HSET', keys[2], 'e', ne)
    e = ne
  end
  return e
end
`

// tierAdmitLua admits recipient ARGV[2] at t = ARGV[1]. ARGV: t, recipient,
// limit, window ns, slack. Returns {ok, retryAt or "", previous instant of
// this recipient or "", instant recorded}.
const tierAdmitLua = tierPrelude + `
local t, to, limit, window, slack = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local e = epoch(KEYS, t, window)
local now = diff(t, e)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local prev = redis.call('ZSCORE', KEYS[1], to)
if prev then
  prev = tonumber(prev)
  if now > prev then redis.call('ZADD', KEYS[1], now, to) end
  local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  expire(KEYS[1], t, add(e, tonumber(top[2]) + window), slack)
  expire(KEYS[2], t, add(e, tonumber(top[2]) + window), slack)
  return {1, "", add(e, prev), add(e, math.max(now, prev))}
end
if redis.call('ZCARD', KEYS[1]) >= limit then
  local old = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local retry = add(t, 1)
  if old[2] then retry = add(e, tonumber(old[2]) + window) end
  return {0, retry, "", ""}
end
redis.call('ZADD', KEYS[1], now, to)
local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
expire(KEYS[1], t, add(e, tonumber(top[2]) + window), slack)
expire(KEYS[2], t, add(e, tonumber(top[2]) + window), slack)
return {1, "", "", t}
`

// tierGiveBackLua undoes an admission: the recipient's instant goes back
// to prev ("" removes it) if it is still the one recorded. ARGV: recipient,
// recorded instant, prev.
const tierGiveBackLua = luaPrelude + `
local to, rec, prev = ARGV[1], ARGV[2], ARGV[3]
local e = redis.call('HGET', KEYS[2], 'e')
if not e then return 0 end
local cur = redis.call('ZSCORE', KEYS[1], to)
if not cur or tonumber(cur) ~= diff(rec, e) then return 0 end
if prev == "" then
  redis.call('ZREM', KEYS[1], to)
else
  redis.call('ZADD', KEYS[1], diff(prev, e), to)
end
return 1
`

// tierCountLua counts the recipients in the window ending at t, changing
// nothing. ARGV: t, window.
const tierCountLua = luaPrelude + `
local e = redis.call('HGET', KEYS[2], 'e')
if not e then return 0 end
return redis.call('ZCOUNT', KEYS[1], '(' .. (diff(ARGV[1], e) - tonumber(ARGV[2])), '+inf')
`

var (
	pairReserve    = redis.NewScript(pairReserveLua)
	pairGiveBack   = redis.NewScript(pairGiveBackLua)
	pairRefused    = redis.NewScript(pairRefusedLua)
	pairAccepted   = redis.NewScript(pairAcceptedLua)
	pairDue        = redis.NewScript(pairDueLua)
	bucketReserve  = redis.NewScript(bucketReserveLua)
	bucketCancel   = redis.NewScript(bucketCancelLua)
	bucketRefused  = redis.NewScript(bucketRefusedLua)
	bucketAccepted = redis.NewScript(bucketAcceptedLua)
	bucketState    = redis.NewScript(bucketStateLua)
	tierAdmit      = redis.NewScript(tierAdmitLua)
	tierGiveBack   = redis.NewScript(tierGiveBackLua)
	tierCount      = redis.NewScript(tierCountLua)
)
