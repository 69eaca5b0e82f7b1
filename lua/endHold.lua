--[[
  endHold: finish or cancel a hold (docs/holds.md). Everything it still holds is refunded to
  the cycle that paid. Ending an ended hold changes nothing: a second cancel refunds nothing
  and is free.
  Layout: holds       the movement layout, then KEYS[5] holdsActive, KEYS[6] holdsEnded (lib/prologue.lua)
  KEYS[7] hold          hash   the hold (lib/holds.lua)
  ARGV[5] status        'completed'|'canceled'
  ARGV[6] reason        'finished'|'canceled'
  ARGV[7] endedHoldsKeepMs integer how long an ended hold is kept
  KEYS[8] outbox        stream the subject's events (lib/events.lua; written only when one fires)
  ARGV[8] eventsMax     integer  events the outbox holds at most
  Returns: {code, hold hold, events integer?, eventsDropped integer?}   hold: lib/holds.lua's reply form;
    events, eventsDropped: the events the call wrote, and those it found no room for
    Codes: OK, NO_ACCOUNT, NO_HOLD, HOLD_ENDED (already ended, nothing changed)
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/holds.lua"
--@include "lib/events.lua"

local ctx = prologue_move(KEYS, ARGV)
ctx.holdsActiveKey, ctx.holdsEndedKey = KEYS[5], KEYS[6]
local holdKey = KEYS[7]
local status, reason = ARGV[5], ARGV[6]
ctx.endedKeepMs = tonumber(ARGV[7])
ctx.outboxKey, ctx.eventsMax = KEYS[8], tonumber(ARGV[8])

local a = holds_credits(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
local h = hold_load(holdKey)
-- Every check has run: the writes, starting with the rollover whatever the outcome.
cycle_save(ctx, a)
if not h then
  return { CODE.NO_HOLD, '', events_reply(ctx) }
end
if h.status ~= 'open' then
  return { CODE.HOLD_ENDED, hold_reply(h), events_reply(ctx) }
end
hold_end(ctx, a, h, status, reason)
holds_save_credits(ctx, a)
return { CODE.OK, hold_reply(h), events_reply(ctx) }
