--[[
  eventsGroup: the deployment's consumer groups (docs/events.md#groups). A group joins when a
  consumer of it starts; events are kept until every group has handled them. Leaving retires
  it with its dead letters; each outbox drops its state when next trimmed.
  KEYS[1] groups        hash   group -> when it joined (ms)
  KEYS[2] deadLetters   hash   the group's dead letters (deleted when it leaves)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] action        'join'|'leave'|'list'
  ARGV[3] group         string
  Returns: {code, ...groups string}   the groups after the action   Codes: OK
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"

local groupsKey, deadKey = KEYS[1], KEYS[2]
local action, group = ARGV[2], ARGV[3]

if action == 'join' then
  redis.call('HSETNX', groupsKey, group, clock_now(ARGV[1]))
elseif action == 'leave' then
  redis.call('HDEL', groupsKey, group)
  redis.call('DEL', deadKey)
end
local reply = { CODE.OK }
for _, name in ipairs(redis.call('HKEYS', groupsKey)) do
  reply[#reply + 1] = name
end
return reply
