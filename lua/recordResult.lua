--[[
  recordResult: settle one video of a bulk job (SPEC §6). A delivered transcript spends 1 from
  the reservation; with comments, a nonempty Top page spends 1 more; failures and empty pages
  spend nothing. Refused, changing nothing, when the job has ended, was canceled, its lease
  ran out, or every video already has its result. Each result renews the lease; the last one
  completes the job and refunds what it did not use.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] journal       stream credit movements
  KEYS[4] activeJobs    zset   open job ids scored by lease expiry (ms)
  KEYS[5] job           hash   the job (fields: lua/lib/jobs.lua)
  KEYS[6] jobItems      set    item ids whose results the job took
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] transcript    'delivered'|'video_unavailable'|'no_captions'
  ARGV[3] commentPage   'nonempty'|'empty'|'failed'|'none'
  ARGV[4] leaseMs       integer  new lease length from now
  ARGV[5] jobKeyPrefix  string   job hashes are <prefix><jobId> (same hash slot)
  ARGV[6] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[7] journalBound  integer  max entries, or max age in ms
  ARGV[8] itemId        string   which item this result is for (a repeat is a replay), '' for none
  Returns: {code, job}   job as JSON ('' when there is none)
    REPLAYED: this item's result was taken before; nothing changed.
    Codes: OK, REPLAYED, NO_ACCOUNT, NO_JOB, WRONG_JOB_KIND, JOB_ENDED, LEASE_EXPIRED, TOO_MANY_RESULTS
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
local jobItemsKey  = KEYS[6]
local nowArg       = ARGV[1]
local transcript   = ARGV[2]
local commentPage  = ARGV[3]
local leaseMs      = tonumber(ARGV[4])
local jobKeyPrefix = ARGV[5]
local journalTrim  = ARGV[6]
local journalBound = tonumber(ARGV[7])
local itemId       = ARGV[8]

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  activeKey = activeKey, jobKeyPrefix = jobKeyPrefix, journalTrim = journalTrim,
  journalBound = journalBound, now = clock_now(nowArg) }

local a = account_current(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
if itemId ~= '' and redis.call('SISMEMBER', jobItemsKey, itemId) == 1 then
  return { CODE.REPLAYED, job_json(job_load(jobKey)) }
end
local job, refused, seen = job_accepting(ctx, a, jobKey, 'bulk')
if not job then
  return { refused, seen and job_json(seen) or '' }
end
if job.dlv + job.fu + job.fn >= job.n then
  return { CODE.TOO_MANY_RESULTS, job_json(job) }
end

if transcript == 'delivered' then
  job.dlv = job.dlv + 1
  job_spend(ctx, a, job, 1)
  if job.cm == 1 then
    if commentPage == 'nonempty' then
      job.cp = job.cp + 1
      job_spend(ctx, a, job, 1)
    else
      job.ce = job.ce + 1
    end
  end
elseif transcript == 'video_unavailable' then
  job.fu = job.fu + 1
else
  job.fn = job.fn + 1
end

if itemId ~= '' then
  redis.call('SADD', jobItemsKey, itemId)
end
job_renew(ctx, job, leaseMs)
if job.dlv + job.fu + job.fn == job.n then
  job_end(ctx, a, job, 'completed', 'completed')
end
account_save_credits(ctx, a)
return { CODE.OK, job_json(job) }
