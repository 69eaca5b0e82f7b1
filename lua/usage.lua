--[[
  usage: the account's whole quota state, without counting a request (SPEC §4: the usage
  endpoint is free). Rolls the cycle over and ends lapsed jobs first, so what it reports is
  current.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] journal       stream credit movements
  KEYS[4] activeJobs    zset   open job ids scored by lease expiry (ms)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] surface       'api'|'web'  whose request window to report
  ARGV[3] windowMs      integer  window length (60000)
  ARGV[4] jobKeyPrefix  string   job hashes are <prefix><jobId> (same hash slot)
  ARGV[5] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[6] journalBound  integer  max entries, or max age in ms
  Returns: {code, state}   state as JSON: the account fields plus now, used, resetMs, active
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"
--@include "lib/jobs.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local activeKey    = KEYS[4]
local nowArg       = ARGV[1]
local surface      = ARGV[2]
local windowMs     = tonumber(ARGV[3])
local jobKeyPrefix = ARGV[4]
local journalTrim  = ARGV[5]
local journalBound = tonumber(ARGV[6])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  activeKey = activeKey, jobKeyPrefix = jobKeyPrefix, journalTrim = journalTrim,
  journalBound = journalBound, now = clock_now(nowArg) }

local a = account_load(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
account_roll(ctx, a)
jobs_expire_lapsed(ctx, a)

local window = math.floor(ctx.now / windowMs)
local windowField, countField = 'wa', 'ca'
if surface == 'web' then
  windowField, countField = 'ww', 'cw'
end
a.used = 0
if a[windowField] == window then
  a.used = a[countField]
end
a.now = ctx.now
a.resetMs = (window + 1) * windowMs - ctx.now
a.active = redis.call('ZCARD', activeKey)
return { CODE.OK, cjson.encode(a) }
