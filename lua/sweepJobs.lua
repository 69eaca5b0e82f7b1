--[[
  sweepJobs: end every job of one account whose lease ran out, with its refunds, so no
  credit or cap slot stays locked (SPEC §6). Safe to run from many servers at once.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] journal       stream credit movements
  KEYS[4] activeJobs    zset   open job ids scored by lease expiry (ms)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] jobKeyPrefix  string   job hashes are <prefix><jobId> (same hash slot)
  ARGV[3] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[4] journalBound  integer  max entries, or max age in ms
  Returns: {code, ended, nextLeaseMs}   nextLeaseMs -1 when no job is open
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
local jobKeyPrefix = ARGV[2]
local journalTrim  = ARGV[3]
local journalBound = tonumber(ARGV[4])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  activeKey = activeKey, jobKeyPrefix = jobKeyPrefix, journalTrim = journalTrim,
  journalBound = journalBound, now = clock_now(nowArg) }

local a = account_current(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, -1 }
end
local ended = jobs_expire_lapsed(ctx, a)
return { CODE.OK, ended, jobs_next_lease(ctx) }
