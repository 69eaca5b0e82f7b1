--[[
  adjust: a support correction (docs/grants.md#grant-void-adjust-refund). amount > 0 adds a grant of kind
  adjustment, priority 50, effective now, never expiring (GRANT_LIMIT when there is no room,
  as for grant); amount < 0 takes -amount credits from the sources in spend order, all or
  nothing (INSUFFICIENT when less is available). The operation id carries the amount: sent
  again it answers the first adjustment (REPLAYED), with another amount it is refused.
  Layout: movement    KEYS[1-4] account, cycles, journal, history; ARGV[1-4] nowMs, journalTrim, journalBound, historyDays (lib/prologue.lua)
  KEYS[5] operations    hash   the subject's recent operation ids (lib/operations.lua)
  ARGV[5] amount        integer  credits added (> 0) or taken (< 0)
  ARGV[6] reason        string   why, kept with an added grant
  ARGV[7] operationId   string   the caller's operation id
  ARGV[8] operationTtlMs integer how long the operation id is remembered
  ARGV[9] grantsMax     integer  live or pending grants an account may hold
  KEYS[6] outbox        stream the subject's events (lib/events.lua; written only when one fires)
  ARGV[10] eventsMax    integer  events the outbox holds at most
  Returns: {code, grantId string, available integer, needed integer, events integer, eventsDropped integer,
    ...sources {grantId string, amount integer}}
    grantId: the grant added ('' for a debit); sources: the grant added, or what each source
    gave, in draw order; needed: -amount when refused INSUFFICIENT; events, eventsDropped: the events the call wrote, and those it found no room for
    Codes: OK, REPLAYED, NO_ACCOUNT, OPERATION_REUSED, GRANT_LIMIT, INSUFFICIENT
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/cycle.lua"
--@include "lib/operations.lua"
--@include "lib/events.lua"
--@include "lib/debit.lua"

local ctx = prologue_move(KEYS, ARGV)
local operationsKey = KEYS[5]
local amountText, reason, operationId = ARGV[5], ARGV[6], ARGV[7]
local operationTtlMs, grantsMax = tonumber(ARGV[8]), tonumber(ARGV[9])
local amount = tonumber(amountText)
ctx.outboxKey, ctx.eventsMax = KEYS[6], tonumber(ARGV[10])

local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '', 0, 0, 0, 0 }
end
a.grantSum = a.grantSum or 0
local terms = 'adjust:' .. amountText
local operationField = 'o' .. operationId
local earlier, operations = operations_read(operationsKey, operationField)
local available = a.balance + a.grantSum

local reply, replayed
if earlier then
  local n, earlierTerms, sources = string.match(earlier, '^%d+ (%d+) (%S*) ?(%S*)')
  if earlierTerms ~= terms then
    reply = { CODE.OPERATION_REUSED, '', available, 0 }
  else
    reply = { CODE.REPLAYED, amount > 0 and 'g' .. n or '', available, 0 }
    replayed = sources
  end
elseif amount > 0 and not grants_room(ctx, a, grantsMax) then
  reply = { CODE.GRANT_LIMIT, '', available, 0 }
elseif amount < 0 and available < -amount then
  reply = { CODE.INSUFFICIENT, '', available, -amount }
end
cycle_save(ctx, a)
if reply then
  reply[5], reply[6] = events_reply(ctx)
  return grants_sources_reply(reply, replayed)
end

-- Every check has run: the writes.
local n, sources = 0, '-'
if amount > 0 then
  n = grants_add(ctx, a, 'adjustment', GRANT_PLAN_PRIORITY, ctx.now, 0, amount, operationId)
  cycle_save(ctx, a)
  redis.call('HSET', ctx.cyclesKey, GRANT_ARCHIVE.reason .. n, reason)
  sources = 'g' .. n .. '=' .. amountText
  available = available + amount
else
  local cycle = string.format('%d', a.cycle)
  sources = debit_in_order(ctx, { balance = a.balance, spent = a.spent, grantSum = a.grantOrder and a.grantSum,
    grantNext = a.grantNext, order = a.grantOrder, events = a.events, cycle = cycle, journalGrant = a.journalGrant and string.format('%d', a.journalGrant) },
    -amount, string.format('%d', -amount), 'adjust', operationId)
  available = available + amount
end
local nowText = string.format('%d', ctx.now)
operations_add(operationsKey, operations, operationField, nowText .. ' ' .. n .. ' ' .. terms .. ' ' .. sources, ctx.now,
  operationTtlMs, nowText)
return grants_sources_reply({ CODE.OK, n > 0 and 'g' .. n or '', available, 0, events_reply(ctx) }, sources)
