--[[
  endHold: finish or cancel a hold (docs/holds.md). Everything it still holds is refunded to
  the cycle that paid. Ending an ended hold changes nothing: a second cancel refunds nothing
  and is free.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   ended cycles
  KEYS[3] journal       stream credit movements (lib/journal.lua)
  KEYS[4] history       hash   credits per day (lib/history.lua)
  KEYS[5] holdsActive   zset   open hold ids scored by lease expiry (ms)
  KEYS[6] holdsEnded    zset   ended hold ids scored by when they ended (ms)
  KEYS[7] hold          hash   the hold (lib/holds.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[3] journalBound  integer  max entries, or max age in ms
  ARGV[4] historyDays   integer  days of history kept; 0 keeps none
  ARGV[5] status        'completed'|'canceled'
  ARGV[6] reason        'finished'|'canceled'
  ARGV[7] endedHoldsKeepMs integer how long an ended hold is kept
  Returns: {code, hold hold}   hold: lib/holds.lua's reply form
    Codes: OK, NO_ACCOUNT, NO_HOLD, HOLD_ENDED (already ended, nothing changed)
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/holds.lua"

local ctx = prologue_move(KEYS, ARGV)
ctx.holdsActiveKey, ctx.holdsEndedKey = KEYS[5], KEYS[6]
local holdKey = KEYS[7]
local status, reason = ARGV[5], ARGV[6]
ctx.endedKeepMs = tonumber(ARGV[7])

local a = holds_credits(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
local h = hold_load(holdKey)
-- Every check has run: the writes, starting with the rollover whatever the outcome.
cycle_save(ctx, a)
if not h then
  return { CODE.NO_HOLD, '' }
end
if h.status ~= 'open' then
  return { CODE.HOLD_ENDED, hold_reply(h) }
end
hold_end(ctx, a, h, status, reason)
holds_save_credits(ctx, a)
return { CODE.OK, hold_reply(h) }
