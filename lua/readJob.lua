--[[
  readJob: one job, after ending the account's lapsed jobs so its status is current.
  Spends no credit (SPEC §6 saved-job reads).
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] journal       stream credit movements
  KEYS[4] activeJobs    zset   open job ids scored by lease expiry (ms)
  KEYS[5] job           hash   the job (fields: lua/lib/jobs.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] jobKeyPrefix  string   job hashes are <prefix><jobId> (same hash slot)
  ARGV[3] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[4] journalBound  integer  max entries, or max age in ms
  Returns: {code, job}   job as JSON   Codes: OK, NO_ACCOUNT, NO_JOB
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"
--@include "lib/jobs.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local activeKey    = KEYS[4]
local jobKey       = KEYS[5]
local nowArg       = ARGV[1]
local jobKeyPrefix = ARGV[2]
local journalTrim  = ARGV[3]
local journalBound = tonumber(ARGV[4])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  activeKey = activeKey, jobKeyPrefix = jobKeyPrefix, journalTrim = journalTrim,
  journalBound = journalBound, now = clock_now(nowArg) }

local a = account_current(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
jobs_expire_lapsed(ctx, a)
local job = job_load(jobKey)
if not job then
  return { CODE.NO_JOB, '' }
end
return { CODE.OK, job_json(job) }
