--[[
  inspectAccount: everything stored for one account, read as is (no rollover, no lapsed-job
  ending), for audits, admin views and the model-based tests. Jobs are listed newest first.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries
  KEYS[3] jobList       zset   every job id scored by creation time (ms)
  ARGV[1] jobKeyPrefix  string   job hashes are <prefix><jobId> (same hash slot)
  Returns: {code, state}   state as JSON {account, cycles, jobs}   Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/account.lua"
--@include "lib/jobs.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local jobListKey   = KEYS[3]
local jobKeyPrefix = ARGV[1]

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
return { CODE.OK, cjson.encode({ account = a, cycles = cycles, jobs = jobs }) }
