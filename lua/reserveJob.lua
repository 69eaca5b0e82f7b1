--[[
  reserveJob: create a bulk job or a comments collection in one atomic step (SPEC §6-7):
  re-check the Idempotency-Key, end lapsed jobs, check the plan, the active-job cap and the
  credits, reserve, record the job and store the outcome under the key. Cost is independent
  of the number of videos.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] journal       stream credit movements
  KEYS[4] activeJobs    zset   open job ids scored by lease expiry (ms)
  KEYS[5] jobList       zset   every job id scored by creation time (ms)
  KEYS[6] job           hash   the new job (fields: lua/lib/jobs.lua)
  KEYS[7] idempotency   hash   the Idempotency-Key record (untouched without a key)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] jobId         string   id of the new job
  ARGV[3] kind          'bulk'|'collection'
  ARGV[4] surface       'api'|'web'
  ARGV[5] videos        integer  N videos resolved (bulk), 0 for a collection
  ARGV[6] comments      0|1      bulk: one Top comments page per transcript
  ARGV[7] limit         integer  collection: credit limit L; 0 for bulk
  ARGV[8] leaseMs       integer  lease length; renewed by every recorded result
  ARGV[9] idemKey       string   '' when the request carries no Idempotency-Key
  ARGV[10] fingerprint  string   hash of the canonical request body
  ARGV[11] idemToken    string   token from beginIdempotency, '' if it was not called
  ARGV[12] idemTtlMs    integer  how long a stored outcome is kept
  ARGV[13] jobKeyPrefix string   job hashes are <prefix><jobId> (same hash slot)
  ARGV[14] journalTrim  string   'off' | 'maxlen' | 'minage'
  ARGV[15] journalBound integer  max entries, or max age in ms
  Returns: {code, payload, storedCode}
    OK: payload = the job (JSON). REPLAYED: payload and storedCode = the stored outcome (of the
    Idempotency-Key, or the job already created under this job id).
    JOB_LIMIT (stored): payload = {"active":n,"cap":n}. INSUFFICIENT: {"balance":n,"needed":n}.
    Codes: also NO_ACCOUNT, PLAN_NOT_ALLOWED, TOO_MANY_VIDEOS, IDEMPOTENCY_REUSED,
    IDEMPOTENCY_IN_USE, JOB_EXISTS
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"
--@include "lib/jobs.lua"
--@include "lib/idempotency.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local activeKey    = KEYS[4]
local jobListKey   = KEYS[5]
local jobKey       = KEYS[6]
local idemKeyName  = KEYS[7]
local nowArg       = ARGV[1]
local jobId        = ARGV[2]
local kind         = ARGV[3]
local surface      = ARGV[4]
local videos       = tonumber(ARGV[5])
local comments     = tonumber(ARGV[6])
local limit        = tonumber(ARGV[7])
local leaseMs      = tonumber(ARGV[8])
local idemKey      = ARGV[9]
local fingerprint  = ARGV[10]
local idemToken    = ARGV[11]
local idemTtlMs    = tonumber(ARGV[12])
local jobKeyPrefix = ARGV[13]
local journalTrim  = ARGV[14]
local journalBound = tonumber(ARGV[15])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  activeKey = activeKey, jobKeyPrefix = jobKeyPrefix, journalTrim = journalTrim,
  journalBound = journalBound, now = clock_now(nowArg) }

local a = account_current(ctx, true)
if not a then
  return { CODE.NO_ACCOUNT, '', 0 }
end
local keyed = idemKey ~= ''
if keyed then
  local found = idempotency_check(idemKeyName, fingerprint, idemToken)
  if found then
    return found
  end
end

-- An outcome that is not kept under the key frees it for a corrected retry (SPEC §7).
local function refuse(code, payload)
  if keyed then
    idempotency_release(idemKeyName, idemToken)
  end
  return { code, payload, 0 }
end

jobs_expire_lapsed(ctx, a)

if kind == 'bulk' and surface == 'api' and a.bulk ~= 1 then
  return refuse(CODE.PLAN_NOT_ALLOWED, cjson.encode({ plan = a.plan }))
end
if kind == 'bulk' and videos > a.maxv then
  return refuse(CODE.TOO_MANY_VIDEOS, cjson.encode({ max = a.maxv }))
end
-- The job id is the creation's own operation id: the same request sent again (a retry, a
-- client resending after a reconnect) gets the job back; another request with it is refused.
local existing = job_load(jobKey)
if existing then
  if existing.kind == kind and existing.sf == surface and existing.n == videos
    and existing.cm == comments and existing.lim == limit then
    return { CODE.REPLAYED, job_json(existing), CODE.OK }
  end
  return refuse(CODE.JOB_EXISTS, '')
end

local active = redis.call('ZCARD', activeKey)
if active >= a.cap then
  local payload = cjson.encode({ active = active, cap = a.cap })
  if keyed then
    idempotency_store(idemKeyName, fingerprint, CODE.JOB_LIMIT, payload, idemTtlMs)
  end
  return { CODE.JOB_LIMIT, payload, 0 }
end

local reserve = limit
if kind == 'bulk' then
  reserve = videos * (1 + comments)
end
if a.bal < reserve then
  return refuse(CODE.INSUFFICIENT, cjson.encode({ balance = a.bal, needed = reserve }))
end

a.bal = a.bal - reserve
a.held = a.held + reserve
account_save_credits(ctx, a)
journal_append(ctx, a, 'reserve', reserve, a.cyc, jobId)

local job = { id = jobId, kind = kind, sf = surface, st = 'queued', n = videos, cm = comments,
  lim = limit, rsv = reserve, dlv = 0, fu = 0, fn = 0, cp = 0, ce = 0, sp = 0, rf = 0, rfe = 0,
  cyc = a.cyc, ca = ctx.now, fa = 0, ls = ctx.now + leaseMs, er = '' }
job_write(jobKey, job)
redis.call('ZADD', activeKey, job.ls, jobId)
redis.call('ZADD', jobListKey, ctx.now, jobId)

local payload = job_json(job)
if keyed then
  idempotency_store(idemKeyName, fingerprint, CODE.OK, payload, idemTtlMs)
end
return { CODE.OK, payload, 0 }
