--[[
  createAccount: open an account on a plan with its first billing cycle (SPEC §2-3).
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] plan          string   plan name
  ARGV[3] allowance     integer  credits per cycle
  ARGV[4] rpmApi        integer  requests per window, surface api
  ARGV[5] rpmWeb        integer  requests per window, surface web
  ARGV[6] jobCap        integer  active-job cap
  ARGV[7] maxVideos     integer  max videos per job
  ARGV[8] bulk          0|1      bulk jobs allowed on surface api
  ARGV[9] anchorMs      integer  cycle anchor (signup or subscription start), -1 for now
  ARGV[10] unit         'd'|'m'  interval unit: days or calendar months
  ARGV[11] length       integer  interval length in units
  Returns: {code, cycle, cycleStartMs, cycleEndMs}   Codes: OK, ACCOUNT_EXISTS
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"

local accountKey   = KEYS[1]
local nowArg       = ARGV[1]
local plan         = ARGV[2]
local allowance    = tonumber(ARGV[3])
local rpmApi       = tonumber(ARGV[4])
local rpmWeb       = tonumber(ARGV[5])
local jobCap       = tonumber(ARGV[6])
local maxVideos    = tonumber(ARGV[7])
local bulk         = tonumber(ARGV[8])
local anchorMs     = tonumber(ARGV[9])
local unit         = ARGV[10]
local length       = tonumber(ARGV[11])

if redis.call('EXISTS', accountKey) == 1 then
  return { CODE.ACCOUNT_EXISTS, 0, 0, 0 }
end

-- The journal starts with the cycle's first movement (lua/lib/journal.lua).
local ctx = { accountKey = accountKey, now = clock_now(nowArg) }
if anchorMs < 0 then
  anchorMs = ctx.now
end
local _, startMs, endMs = current_period(anchorMs, unit, length, ctx.now)

local a = { plan = plan, alw = allowance, nalw = allowance, bal = allowance, spent = 0, held = 0,
  cyc = 1, cs = startMs, ce = endMs, anc = anchorMs, unit = unit, len = length, rpa = rpmApi,
  rpw = rpmWeb, cap = jobCap, maxv = maxVideos, bulk = bulk }
account_write(ctx, a, { 'plan', 'alw', 'nalw', 'bal', 'spent', 'held', 'cyc', 'cs', 'ce', 'anc',
  'interval', 'rpa', 'rpw', 'cap', 'maxv', 'bulk' })
return { CODE.OK, 1, startMs, endMs }
