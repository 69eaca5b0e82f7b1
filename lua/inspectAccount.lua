--[[
  inspectAccount: everything stored for one account, read as is (no rollover, no lapsed-job
  ending), for audits, admin views and the model-based tests. Jobs are listed newest first;
  request counts are those of the window containing nowMs.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] jobList       zset   every job id scored by creation time (ms)
  ARGV[1] jobKeyPrefix  string   job hashes are <prefix><jobId> (same hash slot)
  ARGV[2] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[3] windowMs      integer  window length (60000)
  ARGV[4] apiCounters   string   window counters of surface api (lua/lib/window.lua)
  ARGV[5] webCounters   string   window counters of surface web
  Returns: {code, state}   state as JSON {account, cycles, jobs, api, web}
    api / web: {window, used} in the window containing nowMs
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/account.lua"
--@include "lib/jobs.lua"
--@include "lib/clock.lua"
--@include "lib/window.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local jobListKey   = KEYS[3]
local jobKeyPrefix = ARGV[1]
local nowArg       = ARGV[2]
local windowMs     = tonumber(ARGV[3])
local apiCounters  = ARGV[4]
local webCounters  = ARGV[5]

local a = account_load({ accountKey = accountKey })
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
local cycles = {}
local flat = redis.call('HGETALL', cyclesKey)
for i = 1, #flat, 2 do
  cycles[flat[i]] = tonumber(flat[i + 1])
end
local jobs = {}
for _, id in ipairs(redis.call('ZREVRANGE', jobListKey, 0, -1)) do
  jobs[#jobs + 1] = job_load(jobKeyPrefix .. id)
end
local now = clock_now(nowArg)
local apiWindow, apiUsed = window_used(apiCounters, now, windowMs)
local webWindow, webUsed = window_used(webCounters, now, windowMs)
local api = { window = apiWindow, used = apiUsed }
local web = { window = webWindow, used = webUsed }
return { CODE.OK, cjson.encode({ account = a, cycles = cycles, jobs = jobs, api = api, web = web }) }
