package redisstore

// Instants travel to and from the scripts as decimal strings of Unix
// nanoseconds, because Lua 5.1 numbers are doubles and lose nanoseconds
// past 2^53 (about 104 days after 1970). The scripts split an instant into
// seconds and nanoseconds and compute only differences between instants,
// which are exact in a double while shorter than 104 days; instants outside
// that range are clamped by the Go side before they reach a script.
const luaPrelude = `
local E9 = 1000000000
-- split returns the seconds and nanoseconds of a decimal instant >= 0.
local function split(s)
  local n = #s
  if n <= 9 then return 0, tonumber(s) end
  return tonumber(string.sub(s, 1, n - 9)), tonumber(string.sub(s, n - 8))
end
-- diff returns instant a minus instant b in nanoseconds.
local function diff(a, b)
  local as, an = split(a)
  local bs, bn = split(b)
  return (as - bs) * E9 + (an - bn)
end
-- add returns the decimal instant a + d (d whole nanoseconds, may be
-- negative), not below 0.
local function add(a, d)
  local s, n = split(a)
  local total = n + d
  local q = math.floor(total / E9)
  s = s + q
  n = total - q * E9
  if s < 0 then return "0" end
  if s == 0 then return string.format("%d", n) end
  return string.format("%d%09d", s, n)
end
-- later returns the later of two decimal instants ("" counts as never).
local function later(a, b)
  if a == "" or a == false or a == nil then return b end
  if b == "" or b == false or b == nil then return a end
  if diff(a, b) >= 0 then return a end
  return b
end
-- expire makes key vanish once the caller's clock passes instant until,
-- plus slack ns. Near the server's clock (within an hour) the instant is
-- taken as absolute; far from it (simulated time) the key lives for
-- until - t from now on the server's clock. Either way the key outlives
-- the state it holds.
local function expire(key, t, untilAt, slack)
  local tm = redis.call('TIME')
  local sec, usec = tonumber(tm[1]), tonumber(tm[2])
  local now = string.format("%d%06d000", sec, usec)
  local ttl = diff(untilAt, t)
  if math.abs(diff(t, now)) <= 3600 * E9 then
    ttl = diff(untilAt, now)
  end
  local ms = sec * 1000 + math.floor(usec / 1000) + math.ceil((ttl + slack) / 1000000)
  redis.call('PEXPIREAT', key, ms)
end
`
