--[[
  resetLimits: forget a subject's counts on one surface (src/limits.ts#reset), so its next
  request starts every window afresh.
  KEYS[1] target        hash   the account (lib/account.lua); with a policy, the subject's
                               counts on that policy and surface (lua/admitPolicy.lua)
  ARGV[1] surface       string   the account's surface
  ARGV[2] policy        0|1      1: KEYS[1] is a policy's counts, deleted whole but for an
                                 override (lib/windows.lua)
  Returns: {code}   Codes: OK, NO_ACCOUNT, UNKNOWN_SURFACE
]]
--@include "lib/codes.lua"
--@include "lib/account.lua"
--@include "lib/windows.lua"

local accountKey = KEYS[1]
local surface    = ARGV[1]

if ARGV[2] == '1' then
  -- A policy subject's counts go whole; an override there stays, with the key's time to live.
  local state = redis.call('GET', accountKey)
  local override = state and string.match(state, '^o=%S+')
  if override then
    redis.call('SET', accountKey, override, 'KEEPTTL')
  elseif state then
    redis.call('DEL', accountKey)
  end
  return { CODE.OK }
end
local countsField = ACCOUNT_PREFIX.counters .. surface
local v = redis.call('HMGET', accountKey, ACCOUNT_PREFIX.windows .. surface, countsField)
if not v[1] then
  if redis.call('EXISTS', accountKey) == 0 then
    return { CODE.NO_ACCOUNT }
  end
  return { CODE.UNKNOWN_SURFACE }
end
-- The counts of the plan's windows go; those of lengths an earlier plan had stay theirs.
local kept = windows_forget(v[1], v[2] or nil)
if kept then
  redis.call('HSET', accountKey, countsField, kept)
else
  redis.call('HDEL', accountKey, countsField)
end
return { CODE.OK }
