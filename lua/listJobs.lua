--[[
  listJobs: an account's jobs, newest first, after ending its lapsed jobs. Spends no credit.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] journal       stream credit movements
  KEYS[4] activeJobs    zset   open job ids scored by lease expiry (ms)
  KEYS[5] jobList       zset   every job id scored by creation time (ms)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] offset        integer  jobs to skip
  ARGV[3] count         integer  at most this many
  ARGV[4] jobKeyPrefix  string   job hashes are <prefix><jobId> (same hash slot)
  ARGV[5] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[6] journalBound  integer  max entries, or max age in ms
  Returns: {code, total, active, job1, job2, ...}   jobs as JSON   Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"
--@include "lib/jobs.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local activeKey    = KEYS[4]
local jobListKey   = KEYS[5]
local nowArg       = ARGV[1]
local offset       = tonumber(ARGV[2])
local count        = tonumber(ARGV[3])
local jobKeyPrefix = ARGV[4]
local journalTrim  = ARGV[5]
local journalBound = tonumber(ARGV[6])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  activeKey = activeKey, jobKeyPrefix = jobKeyPrefix, journalTrim = journalTrim,
  journalBound = journalBound, now = clock_now(nowArg) }

local a = account_current(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0 }
end
jobs_expire_lapsed(ctx, a)
local reply = { CODE.OK, redis.call('ZCARD', jobListKey), redis.call('ZCARD', activeKey) }
if count > 0 then
  local ids = redis.call('ZREVRANGE', jobListKey, offset, offset + count - 1)
  for _, id in ipairs(ids) do
    local job = job_load(jobKeyPrefix .. id)
    if job then
      reply[#reply + 1] = job_json(job)
    end
  end
end
return reply
