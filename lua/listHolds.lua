--[[
  listHolds: a page of the account's hold ids, newest first, with how many holds it keeps and
  how many are open; lib/holds.lua's records come from lua/readHold.lua, which declares them.
  Lapsed holds are tidied first (HOLDS_DUE). Writes nothing.
  Layout: look        KEYS[1] account, ARGV[1] nowMs (lib/prologue.lua)
  KEYS[2] holdsActive   zset   open hold ids scored by lease expiry (ms)
  KEYS[3] holdList      zset   every hold id scored by creation time (ms)
  ARGV[2] offset        integer  holds to skip
  ARGV[3] count         integer  at most this many
  Returns HOLDS_DUE: {code, ...due string}   the holds to tidy first (lua/tidyHolds.lua); nothing changed
  Returns: {code, total integer, active integer, ...holdIds string}   a page of ids, newest first
    Codes: OK, HOLDS_DUE, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/holds.lua"

local ctx = prologue_look(KEYS, ARGV)
ctx.holdsActiveKey = KEYS[2]
local holdListKey = KEYS[3]
local offset, count = tonumber(ARGV[2]), tonumber(ARGV[3])

if redis.call('EXISTS', ctx.accountKey) == 0 then
  return { CODE.NO_ACCOUNT, 0, 0 }
end
local due = holds_due_reply(ctx, false)
if due then
  return due
end
local reply = { CODE.OK, redis.call('ZCARD', holdListKey), redis.call('ZCARD', ctx.holdsActiveKey) }
if count > 0 then
  for _, id in ipairs(redis.call('ZREVRANGE', holdListKey, offset, offset + count - 1)) do
    reply[#reply + 1] = id
  end
end
return reply
