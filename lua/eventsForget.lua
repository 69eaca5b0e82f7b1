--[[
  eventsForget: take a subject out of the index of outboxes with events once every group has
  handled them, unless a notify came since the consumer read its entry (compare-and-set).
  KEYS[1] pending       zset   subjects with events not yet handled, scored by their last notify
  ARGV[1] subject       string
  ARGV[2] seenScore     string   the score the consumer read
  Returns: {code, removed 0|1}   Codes: OK
]]
--@include "lib/codes.lua"

local pendingKey, subject, seenScore = KEYS[1], ARGV[1], ARGV[2]

local current = redis.call('ZSCORE', pendingKey, subject)
if not current or tonumber(current) ~= tonumber(seenScore) then
  return { CODE.OK, 0 }
end
redis.call('ZREM', pendingKey, subject)
return { CODE.OK, 1 }
