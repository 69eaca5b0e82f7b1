--[[
  inspectAccount: everything stored for one account, read as is (no rollover, no lapsed-hold
  ending), for audits, admin views and the model-based tests. Holds are listed newest first;
  window counts are those of the windows containing nowMs.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   ended cycles (lib/cycle.lua)
  KEYS[3] holdList      zset   every hold id scored by creation time (ms)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] holdPrefix    string   hold hashes are <prefix><holdId> (same slot)
  ARGV[3] stagger       integer  the subject's offset of fixed windows in ms
  Returns: {code, state json}   state: {account, cycles, holds (lib/holds.lua's reply form),
    windows}, where windows maps each surface to its window reply (lib/windows.lua)
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/cycle.lua"
--@include "lib/holds.lua"
--@include "lib/windows.lua"

local accountKey  = KEYS[1]
local cyclesKey   = KEYS[2]
local holdListKey = KEYS[3]
local nowArg      = ARGV[1]
local holdPrefix  = ARGV[2]
local stagger     = tonumber(ARGV[3])

local a = account_load(accountKey)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
local now = clock_now(nowArg)
local holds = {}
for _, id in ipairs(redis.call('ZREVRANGE', holdListKey, 0, -1)) do
  holds[#holds + 1] = hold_reply(hold_load(holdPrefix .. id, holdPrefix))
end
local counts = {}
for surface, spec in pairs(a.windows) do
  counts[surface] = windows_count(spec, account_counters(accountKey, surface), now, 0, '0', stagger)
end
return { CODE.OK, cjson.encode({ account = a, cycles = cycles_load(cyclesKey), holds = holds, windows = counts }) }
