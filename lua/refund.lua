--[[
  refund: give back all or part of an earlier charge, named by the operation id the caller
  charged with (docs/grants.md#grant-void-adjust-refund), to the sources that paid it, last drawn first: to a
  live source's remaining (the current cycle's balance, a live grant's), to an ended one's
  record (an ended cycle's refunded, an expired grant's refundedAfterEnd, a voided grant's
  voided), which raises no balance. At most what the charge took, over all its refunds. The
  operation id carries the terms: sent again it answers the first refund (REPLAYED), with
  other terms it is refused (OPERATION_REUSED).
  Layout: movement    KEYS[1-4] account, cycles, journal, history; ARGV[1-4] nowMs, journalTrim, journalBound, historyDays (lib/prologue.lua)
  KEYS[5] operations    hash   the subject's recent operation ids, the charge's among them (lib/operations.lua)
  ARGV[5] charge        string   the charge's operation id
  ARGV[6] amount        integer  credits to give back; 0: what is left of the charge
  ARGV[7] operationId   string   this refund's operation id
  ARGV[8] operationTtlMs integer how long the operation id is remembered
  KEYS[6] outbox        stream the subject's events (lib/events.lua; written only when one fires)
  ARGV[9] eventsMax     integer  events the outbox holds at most
  Returns: {code, refunded integer, available integer, events integer, eventsDropped integer,
    ...sources {grantId string, amount integer}}
    sources: what each source got back, last drawn first; events, eventsDropped: the events the call wrote, and those it found no room for
    Codes: OK, REPLAYED, NO_ACCOUNT, OPERATION_REUSED, UNKNOWN_CHARGE (no charge the caller
    named under that id in the last operationTtlMs), EXCEEDS_CHARGE (more than is left of it, or nothing is left)
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/cycle.lua"
--@include "lib/history.lua"
--@include "lib/operations.lua"
--@include "lib/events.lua"

local ctx = prologue_move(KEYS, ARGV)
local operationsKey = KEYS[5]
local chargeId, amountText, operationId = ARGV[5], ARGV[6], ARGV[7]
local operationTtlMs = tonumber(ARGV[8])
local amount = tonumber(amountText)
ctx.outboxKey, ctx.eventsMax = KEYS[6], tonumber(ARGV[9])

local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0, 0, 0 }
end
a.grantSum = a.grantSum or 0
local terms = 'refund:' .. (amount > 0 and amountText or '')
local operationField, chargeField = 'o' .. operationId, 'o' .. chargeId
local earlier, operations = operations_read(operationsKey, operationField)
local record = redis.call('HGET', operationsKey, chargeField)
local available = a.balance + a.grantSum

local replayed
local reply, at, charged, chargeTerms, refunded, sources, tail
if earlier then
  local n, earlierTerms, earlierSources, earlierCharge = string.match(earlier, '^%d+ (%d+) (%S+) (%S+) (.*) %.$')
  if earlierTerms == terms and earlierCharge == chargeId then
    reply, replayed = { CODE.REPLAYED, tonumber(n), available }, earlierSources
  else
    reply = { CODE.OPERATION_REUSED, 0, available }
  end
elseif operationId == chargeId then
  reply = { CODE.OPERATION_REUSED, 0, available }
else
  if record then
    at, charged, chargeTerms, refunded, sources, tail = string.match(record, '^(%d+) (%d+) (%d+:%d+) (%d+) (%S+)(.*)$')
  end
  -- Only a charge the caller named (the library's own ids, ' r', are not the caller's to
  -- name), while it is kept: operationTtlMs from the charge, as the model keeps it, whether
  -- or not a cleanup step has dropped it yet (docs/grants.md#grant-void-adjust-refund).
  if not at or tail ~= '' or tonumber(at) + operationTtlMs <= ctx.now then
    reply = { CODE.UNKNOWN_CHARGE, 0, available }
  else
    charged, refunded = tonumber(charged), tonumber(refunded)
    local left = charged - refunded
    if amount == 0 then
      amount = left
    end
    if amount == 0 or amount > left then
      reply = { CODE.EXCEEDS_CHARGE, 0, available }
    end
  end
end
cycle_save(ctx, a)
if reply then
  reply[4], reply[5] = events_reply(ctx)
  return grants_sources_reply(reply, replayed)
end

-- Every check has run: the writes.
local parts = {}
for _, part in ipairs(grants_range(sources, charged - refunded - amount, amount, true)) do
  local n = part.amount
  if part.kind == 'g' then
    grant_move(ctx, a, part.id, n, 'spent', 'remaining')
    journal_source(ctx, 'refund_charge', n, a.cycle, operationId, 'g' .. part.id)
  elseif part.id == a.cycle then
    a.spent, a.balance = a.spent - n, a.balance + n
    a.journalGrant = journal_append(ctx, 'refund_charge', n, part.id, operationId, a.cycle, a.journalGrant)
  else
    redis.call('HINCRBY', ctx.cyclesKey, part.id .. ':' .. ENDED_CYCLE.spent, -n)
    redis.call('HINCRBY', ctx.cyclesKey, part.id .. ':' .. ENDED_CYCLE.refunded, n)
    a.journalGrant = journal_append(ctx, 'refund_charge', n, part.id, operationId, a.cycle, a.journalGrant)
  end
  parts[#parts + 1] = part.kind .. part.id .. '=' .. string.format('%d', n)
end
local fields = { ACCOUNT.balance, a.balance, ACCOUNT.spent, a.spent }
if a.events then
  a.events = events_moved(ctx, a.events, a.balance, a.cycle, a.grantSum)
  fields[5], fields[6] = ACCOUNT.events, a.events
end
if a.grantOrder then
  fields[#fields + 1], fields[#fields + 2] = ACCOUNT.extras, account_extras(a.grantOrder, a.grantSum, a.grantNext, a.events)
end
redis.call('HSET', ctx.accountKey, unpack(fields))
local given = table.concat(parts, ',')
redis.call('HSET', operationsKey, chargeField,
  string.format('%s %d %s %d %s', at, charged, chargeTerms, refunded + amount, sources))
history_add(ctx, 'r', amount)
local nowText = string.format('%d', ctx.now)
operations_add(operationsKey, operations, operationField,
  string.format('%s %d %s %s %s .', nowText, amount, terms, given, chargeId), ctx.now, operationTtlMs, nowText)
return grants_sources_reply({ CODE.OK, amount, a.balance + a.grantSum, events_reply(ctx) }, given)
