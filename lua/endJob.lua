--[[
  endJob: finish or cancel a job (SPEC §6). Everything it still holds (undelivered
  transcripts, unused comment reservations, the unspent part of a collection's limit) is
  refunded to the cycle that paid. Ending an ended job changes nothing: a second cancel
  refunds nothing and is free.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] journal       stream credit movements
  KEYS[4] activeJobs    zset   open job ids scored by lease expiry (ms)
  KEYS[5] job           hash   the job (fields: lua/lib/jobs.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] status        'completed'|'canceled'
  ARGV[3] reason        'finished'|'canceled'
  ARGV[4] jobKeyPrefix  string   job hashes are <prefix><jobId> (same hash slot)
  ARGV[5] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[6] journalBound  integer  max entries, or max age in ms
  Returns: {code, job}   job as JSON ('' when there is none)
    Codes: OK, NO_ACCOUNT, NO_JOB, JOB_ENDED (already ended, nothing changed)
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
local status       = ARGV[2]
local reason       = ARGV[3]
local jobKeyPrefix = ARGV[4]
local journalTrim  = ARGV[5]
local journalBound = tonumber(ARGV[6])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  activeKey = activeKey, jobKeyPrefix = jobKeyPrefix, journalTrim = journalTrim,
  journalBound = journalBound, now = clock_now(nowArg) }

local a = account_current(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
local job = job_load(jobKey)
if not job then
  return { CODE.NO_JOB, '' }
end
if not job_is_open(job) then
  return { CODE.JOB_ENDED, job_json(job) }
end
job_end(ctx, a, job, status, reason)
account_save_credits(ctx, a)
return { CODE.OK, job_json(job) }
