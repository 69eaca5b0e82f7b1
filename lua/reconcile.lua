--[[
  reconcile: recompute the current cycle's balance, spent and held from the journal and
  return them beside the stored ones (docs/credits.md). Writes nothing but a rollover that is due. A cycle without a movement yet has
  no journal entry and reconciles to its allowance. complete is 0 when the cycle's opening
  grant was trimmed from the journal, or the journal is off.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   ended cycles (written on rollover)
  KEYS[3] journal       stream credit movements (lib/journal.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[3] journalBound  integer  max entries, or max age in ms (the movement layout's; unused)
  ARGV[4] historyDays   integer  days of history kept (the movement layout's; unused)
  KEYS[4] history       hash   credits per day (the movement layout's; unused)
  KEYS[5] outbox        stream the subject's events (lib/events.lua; written when a rollover fires one)
  ARGV[5] eventsMax     integer  events the outbox holds at most
  Returns: {code, complete 0|1, cycle integer, journalBalance integer, journalSpent integer,
    journalHeld integer, balance integer, spent integer, held integer, entries integer,
    events integer?, eventsDropped integer?}   events, eventsDropped: the events the rollover wrote, and those it found no room for
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/cycle.lua"
--@include "lib/journal.lua"
--@include "lib/events.lua"

local ctx = prologue_move(KEYS, ARGV)
ctx.outboxKey, ctx.eventsMax = KEYS[5], tonumber(ARGV[5])

local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT }
end
cycle_save(ctx, a)

local complete, balance, spent, held, entries = 0, 0, 0, 0, 0
for _, e in ipairs(journal_read(ctx.journalKey)) do
  if e.cycle == a.cycle then
    local n = e.amount
    entries = entries + 1
    if e.kind == 'grant' then
      complete, balance, spent, held, entries = 1, n, 0, 0, 1
    elseif e.kind == 'charge' then
      balance, spent = balance - n, spent + n
    elseif e.kind == 'reserve' then
      balance, held = balance - n, held + n
    elseif e.kind == 'spend' then
      held, spent = held - n, spent + n
    elseif e.kind == 'refund' then
      held, balance = held - n, balance + n
    end
  end
end
if complete == 0 and ctx.journalTrim ~= 'off' and a.journalGrant ~= a.cycle then
  complete, balance, spent, held = 1, a.allowance, 0, 0
end
return { CODE.OK, complete, a.cycle, balance, spent, held, a.balance, a.spent, a.held, entries, events_reply(ctx) }
