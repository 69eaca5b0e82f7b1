--[[
  usage: the account's whole quota state, without counting a request (SPEC §4: the usage
  endpoint is free). Rolls the cycle over and ends lapsed jobs first, so what it reports is
  current.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] journal       stream credit movements
  KEYS[4] activeJobs    zset   open job ids scored by lease expiry (ms)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] windowMs      integer  window length (60000)
  ARGV[3] jobKeyPrefix  string   job hashes are <prefix><jobId> (same hash slot)
  ARGV[4] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[5] journalBound  integer  max entries, or max age in ms
  ARGV[6] counterPrefix string   the surface's window counters (lua/lib/window.lua)
  Returns: {code, state}   state as JSON: the account fields plus now, used (in the counter's window), resetMs, active
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"
--@include "lib/jobs.lua"
--@include "lib/window.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local activeKey    = KEYS[4]
local nowArg       = ARGV[1]
local windowMs     = tonumber(ARGV[2])
local jobKeyPrefix = ARGV[3]
local journalTrim  = ARGV[4]
local journalBound = tonumber(ARGV[5])
local counterPrefix = ARGV[6]

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  activeKey = activeKey, jobKeyPrefix = jobKeyPrefix, journalTrim = journalTrim,
  journalBound = journalBound, now = clock_now(nowArg) }

local a = account_load(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
account_roll(ctx, a)
jobs_expire_lapsed(ctx, a)

local window, used = window_used(counterPrefix, ctx.now, windowMs)
a.used = used
a.now = ctx.now
a.resetMs = (window + 1) * windowMs - ctx.now
a.active = redis.call('ZCARD', activeKey)
return { CODE.OK, cjson.encode(a) }
