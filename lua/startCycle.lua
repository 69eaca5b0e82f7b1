--[[
  startCycle: start a new billing cycle now (a billing webhook; docs/accounts.md#billing-cycles). Re-anchors the
  account at this instant, optionally with a new interval; the cycle current now (rolled to
  first, as any call does) is archived as ending now and the new one opens with the plan's
  allowance. Unused credits do not roll over.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   ended cycles
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] unit          'd'|'m'|''  new interval unit, '' keeps the current one
  ARGV[3] length        integer  new interval length, 0 keeps the current one
  Returns: {code, cycle, cycleStartMs, cycleEndMs}   Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"
--@include "lib/cycle.lua"

local accountKey = KEYS[1]
local cyclesKey  = KEYS[2]
local nowArg     = ARGV[1]
local unit       = ARGV[2]
local length     = tonumber(ARGV[3])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, now = clock_now(nowArg) }
local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0, 0 }
end
cycle_reanchor(ctx, a, unit, length)
return { CODE.OK, a.cycle, a.cycleStart, a.cycleEnd }
