--[[
  ackEvents: acknowledge a group's handled events on a subject's outbox, then drop what every
  group has handled (docs/events.md#delivery): entries before the oldest one some joined
  group still needs. A group that joined but has not read this outbox yet keeps everything;
  with no group joined, the outbox keeps its events (up to eventsMax). Groups that left are
  removed from the outbox. An empty outbox is deleted. The account's count of kept events
  follows (lib/events.lua).
  KEYS[1] account       hash   the account (its events field holds the count)
  KEYS[2] outbox        stream the subject's events (lib/events.lua)
  ARGV[1] group         string
  ARGV[2] groups        string   the joined groups, comma-separated
  ARGV[3] ids           string   the entries handled, comma-separated
  Returns: {code, length integer}   length: entries the outbox keeps   Codes: OK
]]
--@include "lib/codes.lua"
--@include "lib/account.lua"

local accountKey, outboxKey = KEYS[1], KEYS[2]
local group, groupsText, idsText = ARGV[1], ARGV[2], ARGV[3]

if redis.call('EXISTS', outboxKey) == 0 then
  return { CODE.OK, 0 }
end
local ids = {}
for id in string.gmatch(idsText, '[^,]+') do
  ids[#ids + 1] = id
end
if #ids > 0 then
  redis.call('XACK', outboxKey, group, unpack(ids))
end

local joined, joinedCount = {}, 0
for name in string.gmatch(groupsText, '[^,]+') do
  joined[name] = true
  joinedCount = joinedCount + 1
end
-- The oldest entry a joined group still needs: its first unacknowledged one, else the one after
-- the last delivered to it.
local function after(id)
  local ms, seq = string.match(id, '^(%d+)%-(%d+)$')
  return ms .. '-' .. (tonumber(seq) + 1)
end
local function older(x, y)
  local xm, xs = string.match(x, '^(%d+)%-(%d+)$')
  local ym, ys = string.match(y, '^(%d+)%-(%d+)$')
  if #xm ~= #ym then
    return #xm < #ym
  end
  if xm ~= ym then
    return xm < ym
  end
  return tonumber(xs) < tonumber(ys)
end
local keepAll, oldest, seen = joinedCount == 0, nil, 0
for _, info in ipairs(redis.call('XINFO', 'GROUPS', outboxKey)) do
  local g = {}
  for i = 1, #info, 2 do
    g[info[i]] = info[i + 1]
  end
  if not joined[g.name] then
    redis.call('XGROUP', 'DESTROY', outboxKey, g.name)
  else
    seen = seen + 1
    local need
    if g.pending > 0 then
      need = redis.call('XPENDING', outboxKey, g.name, '-', '+', 1)[1][1]
    else
      need = after(g['last-delivered-id'])
    end
    if not oldest or older(need, oldest) then
      oldest = need
    end
  end
end
if seen < joinedCount then
  keepAll = true
end
if not keepAll and oldest then
  redis.call('XTRIM', outboxKey, 'MINID', oldest)
end
local length = redis.call('XLEN', outboxKey)
if length == 0 and not keepAll then
  redis.call('DEL', outboxKey)
end
local events = redis.call('HGET', accountKey, ACCOUNT.events)
if events then
  local head, tail = string.match(events, '^(%a%d+) %d+ (.*)$')
  redis.call('HSET', accountKey, ACCOUNT.events, head .. ' ' .. length .. ' ' .. tail)
end
return { CODE.OK, length }
