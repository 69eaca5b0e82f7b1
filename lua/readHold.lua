--[[
  readHold: holds of the account by id, as they stand (docs/holds.md: a lease is checked
  whenever the account is touched, so lapsed holds are tidied first: HOLDS_DUE names them).
  Writes nothing.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] holdsActive   zset   open hold ids scored by lease expiry (ms)
  KEYS[3...] holds      hash   the holds to read (lib/holds.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] asStored      0|1      1: read them as stored, lapsed or not (accounts.inspect)
  Returns HOLDS_DUE: {code, ...due string}   the lapsed holds to tidy first (lua/tidyHolds.lua)
  Returns: {code, ...holds hold?}   holds: lib/holds.lua's reply form, absent for one not found
    Codes: OK, HOLDS_DUE, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/holds.lua"

local ctx = prologue_look(KEYS, ARGV)
ctx.holdsActiveKey = KEYS[2]

if redis.call('EXISTS', ctx.accountKey) == 0 then
  return { CODE.NO_ACCOUNT }
end
local due = ARGV[2] == '1' and {} or holds_due(ctx, false)
if #due > 0 then
  table.insert(due, 1, CODE.HOLDS_DUE)
  return due
end
local reply = { CODE.OK }
for i = 3, #KEYS do
  local h = hold_load(KEYS[i])
  reply[#reply + 1] = h and hold_reply(h) or {}
end
return reply
