--[[
  inspectAccount: everything stored for one account, read as is (no rollover, no tidying),
  for audits, admin views and the model-based tests. Hold ids are listed newest first, for
  lua/readHold.lua to read; window counts are those of the windows containing nowMs.
  Layout: look        KEYS[1] account, ARGV[1] nowMs (lib/prologue.lua)
  KEYS[2] cycles        hash   ended cycles and ended grants (lib/cycle.lua, lib/grants.lua)
  KEYS[3] holdList      zset   every hold id scored by creation time (ms)
  ARGV[2] stagger       integer  the subject's offset of fixed windows in ms
  Returns: {code, state json}   state: {account, cycles, holdIds (newest first), windows,
    grants}, where windows maps each surface to its window reply (lib/windows.lua), grants
    lists every grant kept as lib/grants.lua's grants_list does (as stored); the account's
    attributes gain available (the cycle's balance and the active grants' credits, as stored)
    and nextExpiry (lib/grants.lua, docs/grants.md)
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/cycle.lua"
--@include "lib/windows.lua"

local ctx = prologue_look(KEYS, ARGV)
local cyclesKey, holdListKey = KEYS[2], KEYS[3]
ctx.cyclesKey = cyclesKey
local stagger = tonumber(ARGV[2])

local a = account_load(ctx.accountKey)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
local counts = {}
for surface, spec in pairs(a.windows) do
  counts[surface] = windows_count(spec, a.counters[surface], ctx.now, 0, stagger)
end
a.counters = nil
a.available = a.balance + (a.grantSum or 0)
if a.grantOrder then
  a.nextExpiry = grants_next_expiry(a)
end
local grants = grants_list(ctx, a, true)
a.grants, a.grantTerms, a.grantCredits = nil, nil, nil
local holdIds = redis.call('ZREVRANGE', holdListKey, 0, -1)
return { CODE.OK, cjson.encode({ account = a, cycles = cycles_load(cyclesKey), holdIds = holdIds, windows = counts, grants = grants }) }
