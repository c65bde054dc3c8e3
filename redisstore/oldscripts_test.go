package redisstore

// The pair scripts of b16edfb, the version before the faster scripts, run
// on the same keys as today's to check that processes of both versions
// share one Redis during a rolling upgrade (rolling_test.go). Copied
// verbatim from that commit's scripts.go.

const oldPairPrelude = `
local E9 = 1000000000
local key = KEYS[1]
local tsec, tns = tonumber(ARGV[1]), tonumber(ARGV[2])
local struct = rawget(_G, 'struct') -- absent from miniredis
local raw = redis.call('GET', key)
local bs, bn, d, h, topn, hwn, f, m, flags
if raw then
  if struct then
    bs, bn, d, h, topn, hwn, f, m, flags = struct.unpack('<ddddddddd', raw)
  else
    local a = {string.match(raw, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')}
    for i = 1, 9 do a[i] = tonumber(a[i]) end
    bs, bn, d, h, topn, hwn, f, m, flags = unpack(a)
  end
else
  bs, bn, d, h, topn, hwn, f, m, flags = tsec, tns, 0, 0, 0, 0, 0, 0, 0
end
if flags % 2 < 1 then d = nil end
if flags % 4 < 2 then h = nil end
local top, hw = string.format('%d', topn), string.format('%d', hwn)
local t = (tsec - bs) * E9 + (tns - bn)
-- off converts an instant given as seconds and nanoseconds to an offset.
local function off(sec, nsec) return (tonumber(sec) - bs) * E9 + (tonumber(nsec) - bn) end
-- save writes the state, to expire at max(Due, Hold + memory) + |keep|:
-- for keep >= 0 at that instant (SET PXAT: the caller's clock is close to
-- the server's), for keep < 0 that long after now (SET PX: simulated time).
local function save(keep)
  local fl = 0
  if d then fl = fl + 1 end
  if h then fl = fl + 2 end
  local v
  if struct then
    v = struct.pack('<ddddddddd', bs, bn, d or 0, h or 0, tonumber(top), tonumber(hw), f, m, fl)
  else
    v = string.format('%d %d %d %d %s %s %d %d %d', bs, bn, d or 0, h or 0, top, hw, f, m, fl)
  end
  local u = d or t
  if f > 0 and h then u = math.max(u, h + m) end
  if keep >= 0 then
    redis.call('SET', key, v, 'PXAT', string.format('%d', bs * 1000 + math.ceil((bn + u + keep) / 1000000)))
  else
    redis.call('SET', key, v, 'PX', string.format('%d', math.max(1, math.ceil((u - t - keep) / 1000000))))
  end
end
`

const oldPairRebase = `
if t > 86400 * E9 or t < -86400 * E9 then
  if d then d = d - t end
  if h then h = h - t end
  bs, bn, t = tsec, tns, 0
end
`

const oldPairReserveLua = oldPairPrelude + oldPairRebase + `
local cost, maxWait, keep = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local act = t
if d and d > t then act = d end
local hasPrev, prevDue, prevTop = 0, 0, topn
if d then hasPrev, prevDue = 1, d end
if maxWait >= 0 and act - t > maxWait then
  return {0, bs, bn, act, 0, prevTop, hasPrev, prevDue}
end
d = act + cost
local id = math.max(tsec * 1000000 + math.floor(tns / 1000), hwn + 1)
top, hw = string.format('%d', id), string.format('%d', id)
save(keep)
return {1, bs, bn, act, id, prevTop, hasPrev, prevDue}
`

const oldPairCancelLua = oldPairPrelude + `
if not raw then return 0 end
local keep, id, prevTop = tonumber(ARGV[3]), ARGV[4], ARGV[5]
if id == "0" or top ~= id or t > off(ARGV[8], ARGV[9]) then return 0 end
local want = off(ARGV[10], ARGV[11])
if h and h > want then want = h end
if not d or d ~= want then return 0 end
local pd = nil
if ARGV[6] ~= "z" then pd = off(ARGV[6], ARGV[7]) end
if pd and h then d = math.max(pd, h) elseif pd then d = pd else d = h end
top = prevTop
-- expire relative to the later of t and the act: a refund passes t = 1970
t = math.max(t, off(ARGV[8], ARGV[9]))
save(keep)
return 1
`

const oldPairRefuseLua = oldPairPrelude + oldPairRebase + `
local keep = tonumber(ARGV[3])
m = tonumber(ARGV[4])
local hold = 0
local nh = #ARGV - 4
if nh > 0 then hold = math.max(tonumber(ARGV[4 + math.min(f, nh - 1) + 1]), 0) end
h = math.max(h or t + hold, t + hold)
d = math.max(d or h, h)
if f < 4294967295 then f = f + 1 end
save(keep)
return hold
`
const oldBucketPrelude = `
local E9 = 1000000000
local key = KEYS[1]
local tsec, tns = tonumber(ARGV[1]), tonumber(ARGV[2])
local st = redis.call('HMGET', key, 'bs', 'bn', 'tat', 'hold', 'top', 'hw', 'iv')
local bs, bn = tonumber(st[1]), tonumber(st[2])
if not bs then bs, bn = tsec, tns end
local t = (tsec - bs) * E9 + (tns - bn)
local tat, hold, top, hw = tonumber(st[3]), tonumber(st[4]), st[5] or "0", st[6] or "0"
local iv = tonumber(st[7])
local hadTat = st[3] ~= false
local function off(sec, nsec) return (tonumber(sec) - bs) * E9 + (tonumber(nsec) - bn) end
-- save writes the state and expires the key at max(TAT, Hold) + keep.
local function save(keep)
  if hadTat and not tat then redis.call('HDEL', key, 'tat') end
  local fields = {'bs', bs, 'bn', bn, 'top', top, 'hw', hw}
  if tat then fields[9] = 'tat'; fields[10] = string.format('%d', tat) end
  if hold then fields[#fields + 1] = 'hold'; fields[#fields + 1] = string.format('%d', hold) end
  if iv then fields[#fields + 1] = 'iv'; fields[#fields + 1] = string.format('%d', iv) end
  redis.call('HSET', key, unpack(fields))
  local u = math.max(tat or t, hold or t)
  local tm = redis.call('TIME')
  local sec = tonumber(tm[1])
  local ms
  if math.abs(tsec - sec) > 3600 then
    ms = sec * 1000 + math.floor(tonumber(tm[2]) / 1000) + math.ceil((u - t) / 1000000)
  else
    ms = bs * 1000 + math.ceil((bn + u) / 1000000)
  end
  redis.call('PEXPIREAT', key, ms + math.ceil(keep / 1000000))
  return tm
end
`

const oldBucketReserveLua = oldBucketPrelude + `
local n, interval, burst = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local maxWait, keep = tonumber(ARGV[6]), tonumber(ARGV[7])
if t > 86400 * E9 or t < -86400 * E9 then
  -- move the base to t: offsets past 2^53 ns (104 days) lose nanoseconds
  if tat then tat = tat - t end
  if hold then hold = hold - t end
  bs, bn, t = tsec, tns, 0
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
local prevTat, prevTop = "z", top
if tat then prevTat = string.format('%d', tat) end
if n < 1 or n > burst or (maxWait >= 0 and act - t > maxWait) then
  return {0, bs, bn, string.format('%d', act), "0", prevTop, prevTat}
end
tat = base + n * interval
iv = interval
local tm = redis.call('TIME')
top = string.format('%d', math.max(tonumber(tm[1]) * 1000000 + tonumber(tm[2]), tonumber(hw) + 1))
hw = top
save(keep)
return {1, bs, bn, string.format('%d', act), top, prevTop, prevTat}
`

const oldBucketCancelLua = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
` + oldBucketPrelude + `
local keep, id, prevTop = tonumber(ARGV[3]), ARGV[4], ARGV[5]
if id == "0" or top ~= id or t > off(ARGV[8], ARGV[9]) then return 0 end
if ARGV[6] == "z" then tat = nil else tat = off(ARGV[6], ARGV[7]) end
top = prevTop
save(keep)
return 1
`

const oldBucketHoldLua = oldBucketPrelude + `
hold = math.max(hold or t, t)
save(tonumber(ARGV[3]))
return {bs, bn, string.format('%d', hold)}
`
