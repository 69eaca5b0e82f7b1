--[[
  readEvents: the next events of a subject's outbox for one consumer of a group
  (docs/events.md#delivery): first those delivered before and not acknowledged within retryMs
  (a handler threw, or its process died), then new ones. Each comes with its delivery count;
  one past maxAttempts is the caller's to move to the dead letters. The group is made on the
  outbox when missing, from the start of what it keeps. Entries replayed for another group are
  acknowledged and skipped. Never blocks.
  KEYS[1] outbox        stream the subject's events (lib/events.lua)
  ARGV[1] group         string
  ARGV[2] consumer      string   this consumer's name
  ARGV[3] count         integer  events at most
  ARGV[4] retryMs       integer  idle time after which a delivered event is delivered again
  Returns: {code, length integer, ...events {entry string, id string, type string, at string, data string, group string, attempts integer}}
    length: entries the outbox keeps; entry: the entry's id, to acknowledge; id: the one the
    event was first written with; group: '' or the group a replayed dead letter is for
    Codes: OK
]]
--@include "lib/codes.lua"
--@include "lib/events.lua"

local outboxKey = KEYS[1]
local group, consumer, count, retryMs = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]

if redis.call('EXISTS', outboxKey) == 0 then
  return { CODE.OK, 0 }
end
-- BUSYGROUP when the group is there already: pcall keeps the script going.
redis.pcall('XGROUP', 'CREATE', outboxKey, group, '0')

local reply = { CODE.OK, redis.call('XLEN', outboxKey) }
local others = {}
local function add(entry, attempts)
  local fields = {}
  for i = 1, #entry[2], 2 do
    fields[entry[2][i]] = entry[2][i + 1]
  end
  local target = fields[EVENT_FIELD.group] or ''
  if target ~= '' and target ~= group then
    others[#others + 1] = entry[1]
    return
  end
  local n = #reply
  reply[n + 1], reply[n + 2], reply[n + 3] = entry[1], fields[EVENT_FIELD.id] or entry[1], fields[EVENT_FIELD.type]
  reply[n + 4], reply[n + 5], reply[n + 6], reply[n + 7] = fields[EVENT_FIELD.at], fields[EVENT_FIELD.data], target, attempts
end

local taken = 0
for _, p in ipairs(redis.call('XPENDING', outboxKey, group, 'IDLE', retryMs, '-', '+', count)) do
  local claimed = redis.call('XCLAIM', outboxKey, group, consumer, retryMs, p[1])
  if claimed[1] then
    add(claimed[1], p[4] + 1)
    taken = taken + 1
  end
end
if taken < count then
  local fresh = redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count - taken, 'STREAMS', outboxKey, '>')
  if fresh and fresh[1] then
    for _, entry in ipairs(fresh[1][2]) do
      add(entry, 1)
    end
  end
end
if #others > 0 then
  redis.call('XACK', outboxKey, group, unpack(others))
end
return reply
