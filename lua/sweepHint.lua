--[[
  sweepHint: move one account's entry in the deployment-wide sweep index, only if nobody
  moved it since it was read (compare-and-set), so a concurrent job creation that pushed the
  entry is never lost. Touches one key: safe on a cluster.
  KEYS[1] sweepIndex    zset   account ids scored by when their jobs' leases may run out
  ARGV[1] accountId     string
  ARGV[2] seenScore     string  score the sweeper read; '' sets the entry unconditionally
  ARGV[3] nextScore     integer new score, or -1 to remove the entry
  Returns: {code, moved}   Codes: OK
]]
--@include "lib/codes.lua"

local sweepIndex = KEYS[1]
local accountId  = ARGV[1]
local seenScore  = tonumber(ARGV[2])
local nextScore  = tonumber(ARGV[3])

if seenScore ~= nil then
  local current = redis.call('ZSCORE', sweepIndex, accountId)
  if not current or tonumber(current) ~= seenScore then
    return { CODE.OK, 0 }
  end
end
if nextScore < 0 then
  redis.call('ZREM', sweepIndex, accountId)
else
  redis.call('ZADD', sweepIndex, nextScore, accountId)
end
return { CODE.OK, 1 }
