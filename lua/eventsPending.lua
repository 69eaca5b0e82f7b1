--[[
  eventsPending: a page of the subjects whose outbox has events (docs/events.md#delivery),
  and whether this consumer is the one to scan every outbox now (at most one per scanEveryMs
  in the deployment: the scan finds an outbox whose notify was lost).
  KEYS[1] pending       zset   subjects with events not yet handled, scored by their last notify
  KEYS[2] scanLock      string held by the consumer that scans, for scanEveryMs
  ARGV[1] start         integer  rank of the first subject of the page
  ARGV[2] count         integer  subjects per page
  ARGV[3] consumer      string   this consumer's name
  ARGV[4] scanEveryMs   integer  how often the outboxes are scanned
  Returns: {code, total integer, scan 0|1, ...subjects {subject string, score string}}   Codes: OK
]]
--@include "lib/codes.lua"

local pendingKey, scanLockKey = KEYS[1], KEYS[2]
local start, count, consumer, scanEveryMs = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4]

local scan = 0
if redis.call('SET', scanLockKey, consumer, 'NX', 'PX', scanEveryMs) then
  scan = 1
end
local reply = { CODE.OK, redis.call('ZCARD', pendingKey), scan }
for _, v in ipairs(redis.call('ZRANGE', pendingKey, start, start + count - 1, 'WITHSCORES')) do
  reply[#reply + 1] = v
end
return reply
