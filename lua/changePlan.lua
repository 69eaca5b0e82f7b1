--[[
  changePlan: move an account to another plan (SPEC §3). The request budgets, job cap and
  limits change at once; the new allowance applies from the next cycle, unless startNow asks
  for a new cycle at this instant (then it applies at once, re-anchored like startCycle).
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] journal       stream credit movements
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] plan          string   plan name
  ARGV[3] allowance     integer  credits per cycle
  ARGV[4] rpmApi        integer  requests per window, surface api
  ARGV[5] rpmWeb        integer  requests per window, surface web
  ARGV[6] jobCap        integer  active-job cap
  ARGV[7] maxVideos     integer  max videos per job
  ARGV[8] bulk          0|1      bulk jobs allowed on surface api
  ARGV[9] startNow      0|1      also start a new cycle now
  ARGV[10] unit         'd'|'m'|''  new interval unit with startNow, '' keeps the current one
  ARGV[11] length       integer  new interval length with startNow, 0 keeps the current one
  ARGV[12] journalTrim  string   'off' | 'maxlen' | 'minage'
  ARGV[13] journalBound integer  max entries, or max age in ms
  Returns: {code, cycle, cycleStartMs, cycleEndMs}   Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local nowArg       = ARGV[1]
local plan         = ARGV[2]
local allowance    = tonumber(ARGV[3])
local rpmApi       = tonumber(ARGV[4])
local rpmWeb       = tonumber(ARGV[5])
local jobCap       = tonumber(ARGV[6])
local maxVideos    = tonumber(ARGV[7])
local bulk         = tonumber(ARGV[8])
local startNow     = tonumber(ARGV[9])
local unit         = ARGV[10]
local length       = tonumber(ARGV[11])
local journalTrim  = ARGV[12]
local journalBound = tonumber(ARGV[13])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  journalTrim = journalTrim, journalBound = journalBound, now = clock_now(nowArg) }

local a = account_load(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0, 0 }
end
account_roll(ctx, a)
a.plan, a.nalw, a.rpa, a.rpw = plan, allowance, rpmApi, rpmWeb
a.cap, a.maxv, a.bulk = jobCap, maxVideos, bulk
account_write(ctx, a, { 'plan', 'nalw', 'rpa', 'rpw', 'cap', 'maxv', 'bulk' })
if startNow == 1 then
  account_reanchor(ctx, a, unit, length)
end
return { CODE.OK, a.cyc, a.cs, a.ce }
