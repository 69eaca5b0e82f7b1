--[[
  releaseLease: free a place a request took on a surface with a limit in flight
  (src/limits.ts#release; lib/windows.lua's windows_leased). Freeing a place that is free
  already, or has ended, changes nothing.
  KEYS[1] target        hash   the account (lib/account.lua); with a policy, the subject's
                               counts on that policy and surface (lua/admitPolicy.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] surface       string   the account's surface
  ARGV[3] policy        0|1      1: KEYS[1] is a policy's counts
  ARGV[4] lease         string   the lease id the admit answered (digits)
  Returns: {code, released 0|1}   released: the place was taken and had not ended   Codes: OK
]]
--@include "lib/codes.lua"
--@include "lib/account.lua"
--@include "lib/clock.lua"

local target      = KEYS[1]
local now         = clock_now(ARGV[1])
local countsField = ACCOUNT_PREFIX.counters .. ARGV[2]
local policy      = ARGV[3] == '1'
local lease       = ARGV[4]

local state
if policy then
  state = redis.call('GET', target)
else
  state = redis.call('HGET', target, countsField)
end
local word = state and string.match(state, 'L=%S*')
if not word then
  return { CODE.OK, 0 }
end
local ends = tonumber(string.match(word, '|' .. lease .. '@(%d+)'))
if not ends then
  return { CODE.OK, 0 }
end
local freed = string.gsub(word, '|' .. lease .. '@%d+', '')
local s, e = string.find(state, word, 1, true)
local next = string.sub(state, 1, s - 1) .. freed .. string.sub(state, e + 1)
if policy then
  redis.call('SET', target, next, 'KEEPTTL')
else
  redis.call('HSET', target, countsField, next)
end
return { CODE.OK, ends > now and 1 or 0 }
