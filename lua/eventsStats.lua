--[[
  eventsStats: the deployment's event counts (docs/events.md#size-bound): events dropped by
  full outboxes, subjects with events some group has not handled, the groups.
  KEYS[1] stats         hash   deployment-wide counts: dropped
  KEYS[2] pending       zset   subjects with events not yet handled
  KEYS[3] groups        hash   group -> when it joined (ms)
  Returns: {code, dropped integer, pendingSubjects integer, ...groups string}   Codes: OK
]]
--@include "lib/codes.lua"

local statsKey, pendingKey, groupsKey = KEYS[1], KEYS[2], KEYS[3]

local reply = { CODE.OK, tonumber(redis.call('HGET', statsKey, 'dropped') or '0'), redis.call('ZCARD', pendingKey) }
for _, name in ipairs(redis.call('HKEYS', groupsKey)) do
  reply[#reply + 1] = name
end
return reply
