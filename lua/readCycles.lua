--[[
  readCycles: the summaries of an account's ended cycles, oldest first (lib/cycle.lua).
  KEYS[1] account       hash   the account (lib/account.lua); only checked to exist
  KEYS[2] cycles        hash   ended cycles
  Returns: {code, cycles json}   cycles: a list of summaries   Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/cycle.lua"

local accountKey = KEYS[1]
local cyclesKey  = KEYS[2]

if redis.call('EXISTS', accountKey) == 0 then
  return { CODE.NO_ACCOUNT, '' }
end
return { CODE.OK, cjson.encode(cycles_load(cyclesKey)) }
