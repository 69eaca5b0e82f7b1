--[[
  readHold: holds of the account by id, as they stand (docs/holds.md: a lease is checked
  whenever the account is touched, so lapsed holds are tidied first: HOLDS_DUE names them).
  Writes nothing.
  Layout: look        KEYS[1] account, ARGV[1] nowMs (lib/prologue.lua)
  KEYS[2] holdsActive   zset   open hold ids scored by lease expiry (ms)
  KEYS[3...] holds      hash   the holds to read (lib/holds.lua)
  ARGV[2] asStored      0|1      1: read them as stored, lapsed or not (accounts.inspect)
  Returns HOLDS_DUE: {code, ...due string}   the holds to tidy first (lua/tidyHolds.lua); nothing changed
  Returns: {code, ...holds hold}   holds: lib/holds.lua's reply form, in the order asked; one
    not found is left out
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
local due = ARGV[2] ~= '1' and holds_due_reply(ctx, false)
if due then
  return due
end
local reply = { CODE.OK }
for i = 3, #KEYS do
  local h = hold_load(KEYS[i])
  if h then
    reply[#reply + 1] = hold_reply(h)
  end
end
return reply
