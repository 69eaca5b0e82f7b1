--[[
  sweepHolds: end every hold of one account whose lease ran out, with its refunds, so no
  credit or cap place stays locked (docs/holds.md). Safe to run from many servers at once.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   ended cycles
  KEYS[3] journal       stream credit movements (lib/journal.lua)
  KEYS[4] history       hash   credits per day (lib/history.lua)
  KEYS[5] holdsActive   zset   open hold ids scored by lease expiry (ms)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] holdPrefix    string   hold hashes are <prefix><holdId> (same slot)
  ARGV[3] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[4] journalBound  integer  max entries, or max age in ms
  ARGV[5] historyDays   integer  days of history kept; 0 keeps none
  Returns: {code, ended, nextLeaseMs}   nextLeaseMs -1 when no hold is open
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/holds.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local historyKey   = KEYS[4]
local holdsActiveKey = KEYS[5]
local nowArg       = ARGV[1]
local holdPrefix   = ARGV[2]
local journalTrim  = ARGV[3]
local journalBound = ARGV[4]
local historyDays  = tonumber(ARGV[5])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  historyKey = historyKey, holdsActiveKey = holdsActiveKey, holdPrefix = holdPrefix, journalTrim = journalTrim,
  journalBound = journalBound, historyDays = historyDays, now = clock_now(nowArg) }

local a = holds_credits(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, -1 }
end
local ended = holds_expire_lapsed(ctx, a)
return { CODE.OK, ended, holds_next_lease(ctx) }
