--[[
  eventsNotify: note that a subject's outbox has events (docs/events.md#delivery), in the
  deployment-wide index consumers poll, and count the events a full outbox dropped. Sent
  without waiting after a script reports events; the consumers' periodic scan of the outboxes
  finds what a notify lost. The score always changes, so a consumer that read the entry before
  never removes it (lua/eventsForget.lua).
  KEYS[1] pending       zset   subjects with events not yet handled, scored by their last notify
  KEYS[2] stats         hash   deployment-wide counts: dropped
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] subject       string
  ARGV[3] dropped       integer  events the outbox had no room for
  Returns: {code}   Codes: OK
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"

local pendingKey, statsKey = KEYS[1], KEYS[2]
local subject, dropped = ARGV[2], tonumber(ARGV[3])

local score = clock_now(ARGV[1])
local current = redis.call('ZSCORE', pendingKey, subject)
if current and tonumber(current) >= score then
  score = tonumber(current) + 1
end
redis.call('ZADD', pendingKey, score, subject)
if dropped > 0 then
  redis.call('HINCRBY', statsKey, 'dropped', dropped)
end
return { CODE.OK }
