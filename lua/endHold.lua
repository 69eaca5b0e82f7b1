--[[
  endHold: finish or cancel a hold (docs/holds.md). Everything it still holds is refunded to the
  cycle that paid. Ending an ended hold changes nothing: a second cancel refunds nothing and
  is free.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   ended cycles
  KEYS[3] journal       stream credit movements (lib/journal.lua)
  KEYS[4] history       hash   credits per day (lib/history.lua)
  KEYS[5] holdsActive   zset   open hold ids scored by lease expiry (ms)
  KEYS[6] hold          hash   the hold (lib/holds.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] status        'completed'|'canceled'
  ARGV[3] reason        'finished'|'canceled'
  ARGV[4] holdPrefix    string   hold hashes are <prefix><holdId> (same slot)
  ARGV[5] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[6] journalBound  integer  max entries, or max age in ms
  ARGV[7] historyDays   integer  days of history kept; 0 keeps none
  Returns: {code, hold}   hold in lib/holds.lua's HOLD_REPLY form ({} when there is none)
    Codes: OK, NO_ACCOUNT, NO_HOLD, HOLD_ENDED (already ended, nothing changed)
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
local status       = ARGV[2]
local reason       = ARGV[3]
local holdPrefix   = ARGV[4]
local journalTrim  = ARGV[5]
local journalBound = ARGV[6]
local historyDays  = tonumber(ARGV[7])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  historyKey = historyKey, holdsActiveKey = holdsActiveKey, holdPrefix = holdPrefix, journalTrim = journalTrim,
  journalBound = journalBound, historyDays = historyDays, now = clock_now(nowArg) }

local a = holds_credits(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
local h = hold_load(holdKey, holdPrefix)
if not h then
  return { CODE.NO_HOLD, '' }
end
if h.status ~= 'open' then
  return { CODE.HOLD_ENDED, hold_reply(h) }
end
hold_end(ctx, a, h, status, reason)
holds_save_credits(ctx, a)
return { CODE.OK, hold_reply(h) }
