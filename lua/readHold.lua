--[[
  readHold: one hold of the account, after ending its lapsed holds (docs/holds.md: a lease is
  checked whenever the account is touched). Spends no credit.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   ended cycles
  KEYS[3] journal       stream credit movements (lib/journal.lua)
  KEYS[4] history       hash   credits per day (lib/history.lua)
  KEYS[5] holdsActive   zset   open hold ids scored by lease expiry (ms)
  KEYS[6] hold          hash   the hold (lib/holds.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] holdPrefix    string   hold hashes are <prefix><holdId> (same slot)
  ARGV[3] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[4] journalBound  integer  max entries, or max age in ms
  ARGV[5] historyDays   integer  days of history kept; 0 keeps none
  Returns: {code, hold}   hold in lib/holds.lua's HOLD_REPLY form   Codes: OK, NO_ACCOUNT, NO_HOLD
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/holds.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local historyKey   = KEYS[4]
local holdsActiveKey = KEYS[5]
local holdKey      = KEYS[6]
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
  return { CODE.NO_ACCOUNT, '' }
end
holds_expire_lapsed(ctx, a)
local h = hold_load(holdKey, holdPrefix)
if not h then
  return { CODE.NO_HOLD, '' }
end
return { CODE.OK, hold_reply(h) }
