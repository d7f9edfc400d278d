package redis

// Lua functions the scripts are built from, each defined once here and prepended to the
// scripts that call it (the commit follow-up calls most of them). Redis runs Lua 5.1, whose
// numbers are doubles: an int64 past 2^53 would round, and tostring() prints anything past
// 10^14 in exponent form. So seqs and msg_ids travel as decimal strings, are compared as
// strings, and are never fed through arithmetic; a number Redis answers is turned into one
// only below 2^53, with string.format('%d'), where a double holds it exactly.

// luaDecLess compares two canonical non-negative decimal strings (as strconv and INCR write
// them) without converting them to numbers.
const luaDecLess = `
local function dec_less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
`

// luaAdvance moves active_month forward to target only when target's table is ready, and
// never backward (DESIGN §1, seed 000 §4.7). It returns the resulting active month or false.
// known, when given, is active_key's value the caller read in the same script (one GET less).
// Months are six-digit strings, small enough to compare as numbers; an equal one needs no
// conversion (the common case of every allocation).
const luaAdvance = `
local function advance(active_key, ready_key, target, known)
  local active = known or redis.call('GET', active_key)
  if (not active or (active ~= target and tonumber(active) < tonumber(target)))
      and redis.call('SISMEMBER', ready_key, target) == 1 then
    redis.call('SET', active_key, target)
    return target
  end
  return active
end
`

// luaDueSwitch applies the early switch scheduled in switch_key (HASH month, at: Redis TIME
// in ms; ports.MonthState.SwitchAt) once now_ms has reached its instant, through advance, so
// it is subject to the same rules. active is active_month's value the caller read. It returns
// the resulting active month or false. Instants are below 2^53 ms, exact as Lua doubles.
const luaDueSwitch = `
local function due_switch(active_key, ready_key, switch_key, active, now_ms)
  local s = redis.call('HMGET', switch_key, 'month', 'at')
  if not s[1] or now_ms < tonumber(s[2]) then
    return active
  end
  redis.call('DEL', switch_key)
  return advance(active_key, ready_key, s[1], active)
end
`

// luaTimeMs is Redis TIME in milliseconds.
const luaTimeMs = `
local function time_ms(t)
  t = t or redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// luaUTCMonth turns Unix seconds into YYYYMM with Howard Hinnant's civil_from_days, so the
// month comes from Redis TIME and never from a node's clock. All values stay far below 2^53.
const luaUTCMonth = `
local function utc_month(unix_seconds)
  local z = math.floor(unix_seconds / 86400) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return string.format('%04d%02d', y, m)
end
`

// luaApplyRoute merges one committed range into a topic's route if the topic has one: the
// month's min seq into the route ZSET, the range into its route_meta field (RouteCache.Apply,
// which documents why a missing route stays missing). merge_range joins two ranges of a month
// as the field keeps them, so that several ranges can go in one apply. It needs luaDecLess.
const luaApplyRoute = `
local function merge_range(lo, hi, n, t0, t1, f)
  if dec_less(f[1], lo) then lo = f[1] end
  if dec_less(hi, f[2]) then hi = f[2] end
  n = string.format('%d', tonumber(f[3]) + tonumber(n))
  if f[4] ~= '0' and (t0 == '0' or tonumber(f[4]) < tonumber(t0)) then t0 = f[4] end
  if tonumber(f[5]) > tonumber(t1) then t1 = f[5] end
  return lo, hi, n, t0, t1
end
local function apply_route(rkey, mkey, m, lo, hi, n, t0, t1)
  if redis.call('EXISTS', rkey) == 0 then
    return
  end
  redis.call('ZADD', rkey, 'LT', lo, m)
  local cur = redis.call('HGET', mkey, m)
  if cur then
    local f = {}
    for v in string.gmatch(cur, '[^,]+') do f[#f + 1] = v end
    lo, hi, n, t0, t1 = merge_range(lo, hi, n, t0, t1, f)
  end
  redis.call('HSET', mkey, m, lo .. ',' .. hi .. ',' .. n .. ',' .. t0 .. ',' .. t1)
end
`

// luaPutHot replaces the hot-cache entry of one seq (add_hot), then trims the topic and
// restarts its expiry (trim_hot; ports.FollowUp.Hot): the entries of several seqs of a topic
// may go in before one trim, by the newest creation time among them, which leaves what
// trimming after each would had they come in the order of their creation. Trimming always
// removes the lowest seqs, so the entries left stay contiguous wherever they were.
const luaPutHot = `
local function add_hot(key, seq, member)
  redis.call('ZREMRANGEBYSCORE', key, seq, seq)
  redis.call('ZADD', key, seq, member)
end
local function trim_hot(key, created_ms, window_ms, max_per_topic)
  -- All but the newest max_per_topic: a negative rank counts from the top, and a range that
  -- ends before rank 0 removes nothing (one command where ZCARD then the trim were two;
  -- max_per_topic is at least 1, NewHotCache).
  redis.call('ZREMRANGEBYRANK', key, 0, -1 - tonumber(max_per_topic))
  local cutoff = tonumber(created_ms) - tonumber(window_ms)
  -- Most puts find nothing stale: look at the oldest entry before reading 64 of them.
  local first = redis.call('ZRANGE', key, 0, 0)[1]
  while first and tonumber(string.match(first, '^(%d+):')) < cutoff do
    local oldest = redis.call('ZRANGE', key, 0, 63)
    local stale = 0
    for _, entry in ipairs(oldest) do
      if tonumber(string.match(entry, '^(%d+):')) >= cutoff then break end
      stale = stale + 1
    end
    if stale > 0 then
      redis.call('ZREMRANGEBYRANK', key, 0, stale - 1)
    end
    if stale < 64 then break end
    first = redis.call('ZRANGE', key, 0, 0)[1]
  end
  redis.call('PEXPIRE', key, window_ms)
end
`

// luaMarkAcked flags an existing idempotency record as acked (ports.FollowUp.Acked); an
// expired record is not recreated, because without its seq it would be a lie. Every record
// has its state field (allocateScript writes all five), so HSET adding a field means there was
// no record: what it made goes again, in the same script. One command where EXISTS and HSET
// were two (issue 30 part 2).
const luaMarkAcked = `
local function mark_acked(idem_key)
  if redis.call('HSET', idem_key, 'state', 'acked') == 1 then
    redis.call('DEL', idem_key)
  end
end
`
