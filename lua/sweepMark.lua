--[[
  sweepMark: move one subject's entry in the deployment-wide sweep index, only if nobody
  moved it since it was read (compare-and-set), so a concurrent hold opening that pushed the
  entry is never lost. Touches one key: safe on a cluster.
  KEYS[1] sweepIndex    zset   subjects scored by when a hold lease of theirs may run out
  ARGV[1] subject       string
  ARGV[2] seenScore     string  score the sweeper read; '' sets the entry unconditionally
  ARGV[3] nextScore     integer new score, or -1 to remove the entry
  Returns: {code, moved 0|1}   Codes: OK
]]
--@include "lib/codes.lua"

local sweepIndex = KEYS[1]
local subject    = ARGV[1]
local seenScore  = tonumber(ARGV[2])
local nextScore  = tonumber(ARGV[3])

if seenScore ~= nil then
  local current = redis.call('ZSCORE', sweepIndex, subject)
  if not current or tonumber(current) ~= seenScore then
    return { CODE.OK, 0 }
  end
end
if nextScore < 0 then
  redis.call('ZREM', sweepIndex, subject)
else
  redis.call('ZADD', sweepIndex, nextScore, subject)
end
return { CODE.OK, 1 }
