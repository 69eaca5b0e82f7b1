--[[
  overrideLimits: set or clear one subject's own windows on a surface (src/limits.ts#override),
  kept as the first word of the subject's counts on that surface (lib/windows.lua), so an
  admit reads it with the counts and the counts carry over.
  KEYS[1] target        hash   the account (lib/account.lua); with a policy, the subject's
                               counts on that policy and surface (lua/admitPolicy.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] surface       string   the account's surface
  ARGV[3] policy        0|1      1: KEYS[1] is a policy's counts
  ARGV[4] override      string   'o=<spec, commas for spaces>@<expiresAt, 0: no end>'; '' clears
  ARGV[5] keepMs        integer  a policy's counts: how long they are kept once no override holds them
  Returns: {code}   Codes: OK, NO_ACCOUNT, UNKNOWN_SURFACE
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"

local target   = KEYS[1]
local now      = clock_now(ARGV[1])
local surface  = ARGV[2]
local override = ARGV[4]
local keepMs   = tonumber(ARGV[5])

local countsField = ACCOUNT_PREFIX.counters .. surface
local state
if ARGV[3] == '1' then
  state = redis.call('GET', target)
else
  local v = redis.call('HMGET', target, ACCOUNT_PREFIX.windows .. surface, countsField)
  if not v[1] then
    if redis.call('EXISTS', target) == 0 then
      return { CODE.NO_ACCOUNT }
    end
    return { CODE.UNKNOWN_SURFACE }
  end
  state = v[2]
end
-- The counts without the override they had.
local rest = state
if state and string.byte(state, 1) == 111 then
  rest = string.match(state, '^o=%S+ ?(.*)$')
end
if rest == '' then
  rest = nil
end
local next = rest
if override ~= '' then
  next = rest and override .. ' ' .. rest or override
end
if ARGV[3] ~= '1' then
  if next then
    redis.call('HSET', target, countsField, next)
  else
    redis.call('HDEL', target, countsField)
  end
  return { CODE.OK }
end
if not next then
  redis.call('DEL', target)
  return { CODE.OK }
end
local expires = tonumber(string.match(override, '@(%d+)$') or '-1')
if expires == 0 then
  redis.call('SET', target, next)
else
  redis.call('SET', target, next, 'PX', math.max(keepMs, expires - now, 1))
end
return { CODE.OK }
