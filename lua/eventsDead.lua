--[[
  eventsDead: a group's dead letters (docs/events.md#dead-letters): events whose handler failed
  maxAttempts times, by event id. Putting one twice keeps one.
  KEYS[1] deadLetters   hash   event id -> the dead letter as JSON
  ARGV[1] action        'put'|'take'|'list'|'count'
  ARGV[2] id            string   the event id ('' for list and count)
  ARGV[3] letter        string   the dead letter as JSON (put)
  Returns: {code, count integer, ...letters {id string, letter string}}   take: the one taken
    (none when it was not there); list: every one; count: how many   Codes: OK
]]
--@include "lib/codes.lua"

local deadKey = KEYS[1]
local action, id, letter = ARGV[1], ARGV[2], ARGV[3]

if action == 'put' then
  redis.call('HSET', deadKey, id, letter)
  return { CODE.OK, 1 }
end
if action == 'take' then
  local found = redis.call('HGET', deadKey, id)
  if not found then
    return { CODE.OK, 0 }
  end
  redis.call('HDEL', deadKey, id)
  return { CODE.OK, 1, id, found }
end
local n = redis.call('HLEN', deadKey)
if action == 'count' then
  return { CODE.OK, n }
end
local reply = { CODE.OK, n }
for _, v in ipairs(redis.call('HGETALL', deadKey)) do
  reply[#reply + 1] = v
end
return reply
