--[[
  renewHold: renew an open hold's lease from now without settling anything (docs/holds.md),
  for work that runs longer than a lease: by the hold's own lease length when it was opened
  with one, else by leaseMs. A hold whose lease has already run out is ended here with its
  refunds, as a settlement would end it, and is not renewed.
  Layout: holds       the movement layout, then KEYS[5] holdsActive, KEYS[6] holdsEnded (lib/prologue.lua)
  KEYS[7] hold          hash   the hold (lib/holds.lua)
  ARGV[5] leaseMs       integer  lease length from now, unless the hold has its own
  ARGV[6] endedHoldsKeepMs integer how long an ended hold is kept
  KEYS[8] outbox        stream the subject's events (lib/events.lua; written only when one fires)
  ARGV[7] eventsMax     integer  events the outbox holds at most
  Returns: {code, leaseUntil integer, events integer, eventsDropped integer}   leaseUntil: the new lease (ms); 0
    unless OK; events, eventsDropped: the events the call wrote, and those it found no room for
    Codes: OK, NO_ACCOUNT, NO_HOLD, HOLD_ENDED (ended before, or now as its lease ran out)
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/holds.lua"
--@include "lib/events.lua"

local ctx = prologue_move(KEYS, ARGV)
ctx.holdsActiveKey, ctx.holdsEndedKey = KEYS[5], KEYS[6]
local holdKey = KEYS[7]
local leaseMs = tonumber(ARGV[5])
ctx.endedKeepMs = tonumber(ARGV[6])
ctx.outboxKey, ctx.eventsMax = KEYS[8], tonumber(ARGV[7])

local a = holds_credits(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0, 0 }
end
local h, refused = hold_accepting(ctx, a, holdKey, nil)
-- Every check has run: the writes, starting with the rollover whatever the outcome.
cycle_save(ctx, a)
if not h then
  if refused == CODE.NO_HOLD then
    return { CODE.NO_HOLD, 0, events_reply(ctx) }
  end
  return { CODE.HOLD_ENDED, 0, events_reply(ctx) }
end
return { CODE.OK, tonumber(hold_renew(ctx, h, leaseMs)), events_reply(ctx) }
