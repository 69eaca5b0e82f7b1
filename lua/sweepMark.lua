--[[
  sweepMark: move one subject's entry in the deployment-wide sweep index, only if nobody
  moved it since it was read (compare-and-set), so a concurrent hold opening that pushed the
  entry is never lost. Touches one key: safe on a cluster.
  KEYS[1] sweepIndex    zset   subjects scored by when a hold lease of theirs may run out
  ARGV[1] nowMs         integer the call's clock; -1: Redis TIME (lib/clock.lua)
  ARGV[2] subject       string
  ARGV[3] seenScore     string  score the sweeper read; '' marks a hold about to open: the entry
                                is set unless it is already earlier and not yet due (a due entry
                                is always moved, so a sweep that read it cannot clear it)
  ARGV[4] nextScore     integer new score, or -1 to remove the entry
  Returns: {code, moved 0|1}   Codes: OK
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"

local sweepIndex = KEYS[1]
local subject    = ARGV[2]
local seenScore  = tonumber(ARGV[3])
local nextScore  = tonumber(ARGV[4])

local current = redis.call('ZSCORE', sweepIndex, subject)
if seenScore ~= nil then
  if not current or tonumber(current) ~= seenScore then
    return { CODE.OK, 0 }
  end
elseif current and tonumber(current) <= nextScore and tonumber(current) > clock_now(ARGV[1]) then
  return { CODE.OK, 0 }
end
if nextScore < 0 then
  redis.call('ZREM', sweepIndex, subject)
else
  redis.call('ZADD', sweepIndex, nextScore, subject)
end
return { CODE.OK, 1 }
