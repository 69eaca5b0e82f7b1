--[[
  startCycle: start a new billing cycle now (a billing webhook, docs/credits.md). Re-anchors the
  account at this instant, optionally with a new interval; the cycle current now (rolled to
  first, as any call does) is archived as ending now and the new one opens with the plan's
  allowance. Unused credits do not roll over.
  Layout: movement    KEYS[1-4] account, cycles, journal, history; ARGV[1-4] nowMs, journalTrim, journalBound, historyDays (lib/prologue.lua)
  ARGV[5] unit          'd'|'m'|''  new interval unit, '' keeps the current one
  ARGV[6] length        integer  new interval length, 0 keeps the current one
  ARGV[7] eventsMax     integer  events the outbox holds at most
  KEYS[5] outbox        stream the subject's events (lib/events.lua; written only when one fires)
  Returns: {code, cycle integer, cycleStartMs integer, cycleEndMs integer, events integer, eventsDropped integer}
    events, eventsDropped: the events the call wrote, and those it found no room for
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/account.lua"
--@include "lib/cycle.lua"
--@include "lib/events.lua"

local ctx = prologue_move(KEYS, ARGV)
ctx.outboxKey = KEYS[5]
local unit, length = ARGV[5], tonumber(ARGV[6])
ctx.eventsMax = tonumber(ARGV[7])

local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0, 0, 0, 0 }
end
-- The rollover is saved on its own first, as a rollover of any call is (its cycle.started
-- comes before the new cycle's, each with its check: lib/events.lua).
cycle_save(ctx, a)
cycle_reanchor(ctx, a, unit, length)
cycle_save(ctx, a)
return { CODE.OK, a.cycle, a.cycleStart, a.cycleEnd, events_reply(ctx) }
