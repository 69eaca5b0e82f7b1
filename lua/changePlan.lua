--[[
  changePlan: move an account to another plan (docs/credits.md). Its windows and holds rules change at
  once; the new allowance applies from the next cycle, unless startNow asks for a new cycle at
  this instant (then at once, re-anchored like startCycle).
  Layout: movement    KEYS[1-4] account, cycles, journal, history; ARGV[1-4] nowMs, journalTrim, journalBound, historyDays (lib/prologue.lua)
  ARGV[5] plan          string   plan name ('' with refresh: the account's plan left the table)
  ARGV[6] allowance     integer  credits per cycle
  ARGV[7] holdsCap      integer  open holds allowed at once
  ARGV[8] holdsMaxItems integer  items per hold
  ARGV[9] holdsSurfaces string   surfaces holds may use, comma-separated
  ARGV[10] windows       string   'surface=spec;...' (src/rules/plans.ts, lib/windows.lua)
  ARGV[11] startNow      0|1      also start a new cycle now
  ARGV[12] unit          'd'|'m'|''  new interval unit with startNow, '' keeps the current one
  ARGV[13] length        integer  new interval length with startNow, 0 keeps the current one
  ARGV[14] plansVersion  string   the plan table's version (lib/account.lua)
  ARGV[15] refresh       0|1      1: the same plan's numbers from a newer table, written only
                                  while the account is still behind it (no new cycle)
  ARGV[16] events        string   the plan's thresholds ('b<n>,u<p>,...'), or 'none' (src/rules/events.ts);
                                  an account with thresholds of its own keeps them
  ARGV[17] eventsMax     integer  events the outbox holds at most
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
local plan, allowance = ARGV[5], tonumber(ARGV[6])
local holdsCap, holdsMaxItems, holdsSurfaces = tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local windows, startNow, unit, length = ARGV[10], tonumber(ARGV[11]), ARGV[12], tonumber(ARGV[13])
local plansVersion, refresh = ARGV[14], ARGV[15] == '1'
local events = ARGV[16]
ctx.eventsMax = tonumber(ARGV[17])

local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0, 0, 0, 0 }
end
if refresh and not account_behind(a.plansVersion, plansVersion) then
  -- Another server refreshed it first, from this table or a newer one.
  return { CODE.OK, a.cycle, a.cycleStart, a.cycleEnd, events_reply(ctx) }
end
if refresh and plan == '' then
  -- Its plan has left the table: it keeps its numbers, and is not asked again.
  a.plansVersion = plansVersion
  account_write(ctx.accountKey, a, { 'plansVersion' })
  return { CODE.OK, a.cycle, a.cycleStart, a.cycleEnd, events_reply(ctx) }
end
cycle_save(ctx, a)
account_write_plan(ctx.accountKey, a, plan, allowance, holdsCap, holdsMaxItems, holdsSurfaces, windows, plansVersion)
if not (a.events and string.sub(a.events, 1, 1) == 'o') then
  events_configure(ctx, a, 'p', events)
end
if startNow == 1 then
  cycle_reanchor(ctx, a, unit, length)
  cycle_save(ctx, a)
end
return { CODE.OK, a.cycle, a.cycleStart, a.cycleEnd, events_reply(ctx) }
