--[[
  replayEvent: deliver a dead letter again to one group (docs/events.md#dead-letters): the
  event goes back into its subject's outbox, with its id, for that group only (the others
  skip it). It is written whatever the outbox's bound.
  KEYS[1] account       hash   the account (its events field holds the count)
  KEYS[2] outbox        stream the subject's events (lib/events.lua)
  ARGV[1] id            string   the event's id
  ARGV[2] type          string
  ARGV[3] at            string   when it was written (ms)
  ARGV[4] data          string   its data as JSON
  ARGV[5] group         string   the group it is for
  Returns: {code}   Codes: OK
]]
--@include "lib/codes.lua"
--@include "lib/account.lua"
--@include "lib/events.lua"

local accountKey, outboxKey = KEYS[1], KEYS[2]

redis.call('XADD', outboxKey, '*', EVENT_FIELD.type, ARGV[2], EVENT_FIELD.at, ARGV[3], EVENT_FIELD.data, ARGV[4],
  EVENT_FIELD.group, ARGV[5], EVENT_FIELD.id, ARGV[1])
local events = redis.call('HGET', accountKey, ACCOUNT.events)
if events then
  local head, count, tail = string.match(events, '^(%a%d+) (%d+) (.*)$')
  redis.call('HSET', accountKey, ACCOUNT.events, head .. ' ' .. (tonumber(count) + 1) .. ' ' .. tail)
end
return { CODE.OK }
