--[[
  readCycles: the summaries of an account's ended cycles, oldest first (lib/cycle.lua).
  KEYS[1] cycles        hash   ended cycles
  Returns: {code, cycles}   cycles as a JSON list   Codes: OK
]]
--@include "lib/codes.lua"
--@include "lib/cycle.lua"

local cyclesKey = KEYS[1]

return { CODE.OK, cjson.encode(cycles_load(cyclesKey)) }
