--[[
  setThresholds: give an account thresholds of its own, or back to its plan's
  (docs/events.md#thresholds). The conditions that hold now are noted, not fired: setting a
  threshold crosses nothing. The account is brought to its current cycle first, as any call
  brings it.
  Layout: movement    KEYS[1-4] account, cycles, journal, history; ARGV[1-4] nowMs, journalTrim, journalBound, historyDays (lib/prologue.lua)
  KEYS[5] outbox        stream the subject's events (lib/events.lua)
  ARGV[5] own           0|1      1: spec is the account's own; 0: back to its plan's
  ARGV[6] spec          string   own: 'b<n>,u<p>,...' (src/rules/events.ts); else every plan
                                 with events as 'plan=spec;plan=spec' (a plan not named has none)
  ARGV[7] eventsMax     integer  events the outbox holds at most
  Returns: {code, cycleEndMs integer, events integer, eventsDropped integer}   cycleEndMs: when
    the current cycle ends; events, eventsDropped: the events a rollover wrote, and those it
    found no room for
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/account.lua"
--@include "lib/cycle.lua"
--@include "lib/events.lua"

local ctx = prologue_move(KEYS, ARGV)
ctx.outboxKey = KEYS[5]
local own, spec = ARGV[5] == '1', ARGV[6]
ctx.eventsMax = tonumber(ARGV[7])

local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0, 0 }
end
cycle_save(ctx, a)
if own then
  events_configure(ctx, a, 'o', spec)
else
  local planSpec = 'none'
  for plan, given in string.gmatch(spec, '([^=;]+)=([^;]*)') do
    if plan == a.plan then
      planSpec = given
    end
  end
  events_configure(ctx, a, 'p', planSpec)
end
return { CODE.OK, a.cycleEnd, events_reply(ctx) }
