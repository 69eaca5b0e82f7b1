--[[
  startCycle: start a new billing cycle now (a billing webhook, SPEC §3). Re-anchors the
  account at this instant, optionally with a new interval; the old cycle is archived and the
  new one opens with the plan's allowance. Unused credits do not roll over.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] journal       stream credit movements
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] unit          'd'|'m'|''  new interval unit, '' keeps the current one
  ARGV[3] length        integer  new interval length, 0 keeps the current one
  ARGV[4] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[5] journalBound  integer  max entries, or max age in ms
  Returns: {code, cycle, cycleStartMs, cycleEndMs}   Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local nowArg       = ARGV[1]
local unit         = ARGV[2]
local length       = tonumber(ARGV[3])
local journalTrim  = ARGV[4]
local journalBound = tonumber(ARGV[5])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  journalTrim = journalTrim, journalBound = journalBound, now = clock_now(nowArg) }

local a = account_load(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0, 0 }
end
account_reanchor(ctx, a, unit, length)
return { CODE.OK, a.cyc, a.cs, a.ce }
