--[[
  readCycles: the summaries of an account's ended cycles, oldest first (lib/cycle.lua), as
  they stand now: a cycle that has ended is among them whether a rollover wrote it yet or not.
  Writes nothing.
  Layout: look        KEYS[1] account, ARGV[1] nowMs (lib/prologue.lua)
  KEYS[2] cycles        hash   ended cycles
  Returns: {code, cycles json}   cycles: a list of summaries   Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/cycle.lua"

local ctx = prologue_look(KEYS, ARGV)
ctx.cyclesKey = KEYS[2]

local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
return { CODE.OK, cjson.encode(cycles_load(ctx.cyclesKey, a)) }
