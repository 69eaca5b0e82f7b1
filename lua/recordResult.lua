--[[
  recordResult: settle one item of a job (SPEC §6). A bulk job's item is a video: a delivered
  transcript spends 1 from the reservation and, with comments, a nonempty Top page 1 more;
  failures and empty pages spend nothing; the last video completes the job. A comments
  collection's item is a page: a nonempty page (replies included) spends 1 from the limit,
  empty pages and failures nothing; when the limit is used up the collection completes.
  Refused, changing nothing, when the job has ended (so also once every video has its
  result), was canceled, its lease ran out, or the job is not of the expected kind. Each result renews
  the lease; an item id seen before makes the call a replay. Ending refunds what is unused.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] journal       stream credit movements
  KEYS[4] activeJobs    zset   open job ids scored by lease expiry (ms)
  KEYS[5] job           hash   the job (fields: lua/lib/jobs.lua)
  KEYS[6] jobItems      set    item ids whose results the job took
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] kind          'bulk'|'collection'  the kind of job the caller settles
  ARGV[3] transcript    'delivered'|'video_unavailable'|'no_captions' (bulk), '' (collection)
  ARGV[4] commentPage   'nonempty'|'empty'|'failed', or 'none' for a bulk job without comments
  ARGV[5] leaseMs       integer  new lease length from now
  ARGV[6] jobKeyPrefix  string   job hashes are <prefix><jobId> (same hash slot)
  ARGV[7] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[8] journalBound  integer  max entries, or max age in ms
  ARGV[9] itemId        string   which item this result is for (a repeat is a replay), '' for none
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
local kind         = ARGV[2]
local transcript   = ARGV[3]
local commentPage  = ARGV[4]
local leaseMs      = tonumber(ARGV[5])
local jobKeyPrefix = ARGV[6]
local journalTrim  = ARGV[7]
local journalBound = tonumber(ARGV[8])
local itemId       = ARGV[9]

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
local job, refused, seen = job_accepting(ctx, a, jobKey, kind)
if not job then
  return { refused, seen and job_json(seen) or '' }
end

-- A nonempty comments page spends 1; an empty or failed one is counted and spends nothing.
local function settle_page()
  if commentPage == 'nonempty' then
    job.cp = job.cp + 1
    job_spend(ctx, a, job, 1)
  else
    job.ce = job.ce + 1
  end
end

local finished, reason
if kind == 'bulk' then
  if transcript == 'delivered' then
    job.dlv = job.dlv + 1
    job_spend(ctx, a, job, 1)
    if job.cm == 1 then
      settle_page()
    end
  elseif transcript == 'video_unavailable' then
    job.fu = job.fu + 1
  else
    job.fn = job.fn + 1
  end
  finished, reason = job.dlv + job.fu + job.fn == job.n, 'completed'
else
  settle_page()
  finished, reason = job.cp >= job.lim, 'limit_reached'
end

if itemId ~= '' then
  redis.call('SADD', jobItemsKey, itemId)
end
job_renew(ctx, job, leaseMs)
if finished then
  job_end(ctx, a, job, 'completed', reason)
end
account_save_credits(ctx, a)
return { CODE.OK, job_json(job) }
