package redis

// Lua snippets shared by several scripts. Redis runs Lua 5.1, whose numbers are doubles: an
// int64 past 2^53 would round, and tostring() prints anything past 10^14 in exponent form. So
// seqs and msg_ids travel as decimal strings, are compared as strings, and are never fed
// through arithmetic.

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
// Months are six-digit strings, small enough to compare as numbers.
const luaAdvance = `
local function advance(active_key, ready_key, target, known)
  local active = known or redis.call('GET', active_key)
  if (not active or tonumber(active) < tonumber(target))
      and redis.call('SISMEMBER', ready_key, target) == 1 then
    redis.call('SET', active_key, target)
    return target
  end
  return active
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
