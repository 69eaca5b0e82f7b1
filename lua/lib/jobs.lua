--[[
  jobs: the credit movements of bulk jobs and comment collections (SPEC §6).
  Job hash fields:
    id kind ('bulk' | 'collection')   sf surface   st status: queued | running | completed | canceled
    n videos   cm 1 with comments     lim credit limit of a collection
    rsv reserved   dlv delivered      fu / fn failed video_unavailable / no_captions
    cp comment pages spent            ce comment results that spent nothing (empty / failed)
    sp spent   rf refunded            rfe refunded to an ended cycle (part of rf)
    cyc paying cycle   ca created (ms)   fa finished (ms, 0 while active)   ls lease expiry (ms)
    er end reason: '' | completed | finished | canceled | limit_reached | lease_expired
  Credits still held by a job: rsv - sp - rf. They belong to the cycle that paid (cyc).
  Each job also has a set <job key>:i of the item ids whose results it took, so a result sent
  twice (a retry, a client resending after a reconnect) counts once; the set is kept for
  JOB_ITEMS_KEPT_MS after the job ends, then expires.
  ctx fields used: accountKey, cyclesKey, activeKey, jobKeyPrefix, now (+ journal fields).
]]
--@include "codes.lua"
--@include "account.lua"

local JOB_TEXT_FIELDS = { id = true, kind = true, sf = true, st = true, er = true }
local JOB_ITEMS_KEPT_MS = 3600000

local function job_load(jobKey)
  local flat = redis.call('HGETALL', jobKey)
  if #flat == 0 then
    return nil
  end
  local job = {}
  for i = 1, #flat, 2 do
    local field = flat[i]
    if JOB_TEXT_FIELDS[field] then
      job[field] = flat[i + 1]
    else
      job[field] = tonumber(flat[i + 1])
    end
  end
  return job
end

-- Write every field of a job table to its hash.
local function job_write(jobKey, job)
  local args = {}
  for field, value in pairs(job) do
    args[#args + 1] = field
    args[#args + 1] = value
  end
  redis.call('HSET', jobKey, unpack(args))
end

local function job_is_open(job)
  return job.st == 'queued' or job.st == 'running'
end

-- Move n reserved credits to spent, on the cycle that paid for the job.
local function job_spend(ctx, a, job, n)
  if job.cyc == a.cyc then
    a.held = a.held - n
    a.spent = a.spent + n
  else
    redis.call('HINCRBY', ctx.cyclesKey, job.cyc .. ':h', -n)
    redis.call('HINCRBY', ctx.cyclesKey, job.cyc .. ':s', n)
  end
  job.sp = job.sp + n
  journal_append(ctx, a, 'spend', n, job.cyc, job.id)
end

-- Give back n reserved credits to the cycle that paid. If that cycle has ended the refund is
-- recorded there and on the job, and the current balance does not change (SPEC §6).
local function job_refund(ctx, a, job, n)
  if n <= 0 then
    return
  end
  if job.cyc == a.cyc then
    a.held = a.held - n
    a.bal = a.bal + n
    journal_append(ctx, a, 'refund', n, job.cyc, job.id)
  else
    redis.call('HINCRBY', ctx.cyclesKey, job.cyc .. ':h', -n)
    redis.call('HINCRBY', ctx.cyclesKey, job.cyc .. ':r', n)
    job.rfe = job.rfe + n
    journal_append(ctx, a, 'refund_ended', n, job.cyc, job.id)
  end
  job.rf = job.rf + n
end

-- End an open job: refund everything it still holds, free its cap slot. The caller saves
-- the account's credits afterwards (account_save_credits).
local function job_end(ctx, a, job, status, reason)
  job_refund(ctx, a, job, job.rsv - job.sp - job.rf)
  job.st = status
  job.er = reason
  job.fa = ctx.now
  redis.call('HSET', ctx.jobKeyPrefix .. job.id, 'st', status, 'er', reason, 'fa', ctx.now,
    'sp', job.sp, 'rf', job.rf, 'rfe', job.rfe)
  redis.call('ZREM', ctx.activeKey, job.id)
  redis.call('PEXPIRE', ctx.jobKeyPrefix .. job.id .. ':i', JOB_ITEMS_KEPT_MS)
end

-- End every job whose lease ran out (its worker stopped reporting), with its refunds.
-- Returns how many ended.
local function jobs_expire_lapsed(ctx, a)
  local ids = redis.call('ZRANGEBYSCORE', ctx.activeKey, '-inf', ctx.now)
  for _, id in ipairs(ids) do
    local job = job_load(ctx.jobKeyPrefix .. id)
    if job and job_is_open(job) then
      job_end(ctx, a, job, 'completed', 'lease_expired')
    else
      redis.call('ZREM', ctx.activeKey, id)
    end
  end
  if #ids > 0 then
    account_save_credits(ctx, a)
  end
  return #ids
end

-- Earliest lease among the open jobs, or -1 when none is open.
local function jobs_next_lease(ctx)
  local first = redis.call('ZRANGE', ctx.activeKey, 0, 0, 'WITHSCORES')
  if #first == 0 then
    return -1
  end
  return tonumber(first[2])
end

-- The job as a JSON object of its hash fields (the shape src/jobs.ts reads).
local function job_json(job)
  return cjson.encode(job)
end

-- A job that may take one more result, or the code that refuses it. A job whose lease ran
-- out is ended here with its refunds: the check is made when the result arrives (SPEC §6).
local function job_accepting(ctx, a, jobKey, kind)
  local job = job_load(jobKey)
  if not job then
    return nil, CODE.NO_JOB
  end
  if job.kind ~= kind then
    return nil, CODE.WRONG_JOB_KIND
  end
  if not job_is_open(job) then
    return nil, CODE.JOB_ENDED, job
  end
  if ctx.now >= job.ls then
    job_end(ctx, a, job, 'completed', 'lease_expired')
    account_save_credits(ctx, a)
    return nil, CODE.LEASE_EXPIRED, job
  end
  return job
end

-- After an accepted result: renew the lease and save the counters.
local function job_renew(ctx, job, leaseMs)
  job.st = 'running'
  job.ls = ctx.now + leaseMs
  redis.call('ZADD', ctx.activeKey, job.ls, job.id)
  job_write(ctx.jobKeyPrefix .. job.id, job)
end
