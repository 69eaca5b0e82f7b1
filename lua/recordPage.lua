--[[
  recordPage: settle one page fetched by a comments collection (SPEC §6). A nonempty page
  (replies included) spends 1 from the collection's limit; empty pages and failures spend
  nothing. When the limit is used up the collection completes. Refused, changing nothing,
  when the collection has ended, was canceled or its lease ran out. Renews the lease.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] journal       stream credit movements
  KEYS[4] activeJobs    zset   open job ids scored by lease expiry (ms)
  KEYS[5] job           hash   the collection (fields: lua/lib/jobs.lua)
  KEYS[6] jobItems      set    item ids whose results the job took
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] page          'nonempty'|'empty'|'failed'
  ARGV[3] leaseMs       integer  new lease length from now
  ARGV[4] jobKeyPrefix  string   job hashes are <prefix><jobId> (same hash slot)
  ARGV[5] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[6] journalBound  integer  max entries, or max age in ms
  ARGV[7] itemId        string   which item this result is for (a repeat is a replay), '' for none
  Returns: {code, job}   job as JSON ('' when there is none)
    REPLAYED: this item's result was taken before; nothing changed.
    Codes: OK, REPLAYED, NO_ACCOUNT, NO_JOB, WRONG_JOB_KIND, JOB_ENDED, LEASE_EXPIRED
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
local page         = ARGV[2]
local leaseMs      = tonumber(ARGV[3])
local jobKeyPrefix = ARGV[4]
local journalTrim  = ARGV[5]
local journalBound = tonumber(ARGV[6])
local itemId       = ARGV[7]

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
local job, refused, seen = job_accepting(ctx, a, jobKey, 'collection')
if not job then
  return { refused, seen and job_json(seen) or '' }
end

if page == 'nonempty' then
  job.cp = job.cp + 1
  job_spend(ctx, a, job, 1)
else
  job.ce = job.ce + 1
end
if itemId ~= '' then
  redis.call('SADD', jobItemsKey, itemId)
end
job_renew(ctx, job, leaseMs)
if job.cp >= job.lim then
  job_end(ctx, a, job, 'completed', 'limit_reached')
end
account_save_credits(ctx, a)
return { CODE.OK, job_json(job) }
