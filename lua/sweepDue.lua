--[[
  sweepDue: the subjects whose hold leases may have run out by now, oldest first.
  KEYS[1] sweepIndex    zset   subjects scored by when a hold lease of theirs may run out
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] count         integer  at most this many
  Returns: {code, nowMs integer, ...due {subject string, score string}}   Codes: OK
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"

local sweepIndex = KEYS[1]
local nowArg     = ARGV[1]
local count      = tonumber(ARGV[2])

local now = clock_now(nowArg)
local due = redis.call('ZRANGEBYSCORE', sweepIndex, '-inf', now, 'WITHSCORES', 'LIMIT', 0, count)
local reply = { CODE.OK, now }
for _, v in ipairs(due) do
  reply[#reply + 1] = v
end
return reply
