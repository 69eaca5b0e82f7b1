--[[
  changePlan: move an account to another plan (docs/accounts.md#billing-cycles). Its windows and holds rules change at
  once; the new allowance applies from the next cycle, unless startNow asks for a new cycle at
  this instant (then at once, re-anchored like startCycle).
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   ended cycles
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] plan          string   plan name
  ARGV[3] allowance     integer  credits per cycle
  ARGV[4] holdsCap      integer  open holds allowed at once
  ARGV[5] holdsMaxItems integer  items per hold
  ARGV[6] holdsSurfaces string   surfaces holds may use, comma-separated
  ARGV[7] windows       string   'surface=spec;...' (src/plans.ts, lib/windows.lua)
  ARGV[8] startNow      0|1      also start a new cycle now
  ARGV[9] unit          'd'|'m'|''  new interval unit with startNow, '' keeps the current one
  ARGV[10] length       integer  new interval length with startNow, 0 keeps the current one
  Returns: {code, cycle, cycleStartMs, cycleEndMs}   Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"
--@include "lib/cycle.lua"

local accountKey    = KEYS[1]
local cyclesKey     = KEYS[2]
local nowArg        = ARGV[1]
local plan          = ARGV[2]
local allowance     = tonumber(ARGV[3])
local holdsCap      = tonumber(ARGV[4])
local holdsMaxItems = tonumber(ARGV[5])
local holdsSurfaces = ARGV[6]
local windows       = ARGV[7]
local startNow      = tonumber(ARGV[8])
local unit          = ARGV[9]
local length        = tonumber(ARGV[10])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, now = clock_now(nowArg) }
local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0, 0 }
end
account_write_plan(accountKey, a, plan, allowance, holdsCap, holdsMaxItems, holdsSurfaces, windows)
if startNow == 1 then
  cycle_reanchor(ctx, a, unit, length)
end
return { CODE.OK, a.cycle, a.cycleStart, a.cycleEnd }
