--[[
  charge: take required + optional credits atomically (docs/credits.md): insufficient when the
  credits available (the cycle's balance and the active grants', docs/grants.md) are below
  required, else required + min(optional, available - required), drawn from the sources in
  spend order (lib/grants.lua; an account without grants: all from the cycle's balance).
  Every charge carries an operation id, the caller's or one the library made, kept in the
  subject's operations (lib/operations.lua) with the charge's terms and the sources that paid:
  the same id sent again with the same terms (a retry, a command a client resends after a
  reconnect) is answered with what it charged and takes nothing; with other terms it is
  refused (OPERATION_REUSED). Straight-line: the rollover (of the cycle, of the grants) runs
  only past the cycle's end or the grants' next roll, and is written only once every check
  has run (whatever the outcome: any call brings the account to its current cycle).
  Layout: movement    KEYS[1-4] account, cycles, journal, history; ARGV[1-4] nowMs, journalTrim, journalBound, historyDays (lib/prologue.lua)
  KEYS[5] operations    hash   the subject's recent operation ids (lib/operations.lua)
  ARGV[5] required      integer  credits that must all be available
  ARGV[6] optional      integer  credits taken as far as the credits available allow
  ARGV[7] operationId   string   the operation id; '' keeps no record (resendIds: false)
  ARGV[8] madeByLibrary 0|1      1: the library made the id (kept a shorter while, lib/operations.lua)
  ARGV[9] operationTtlMs integer how long a caller's operation id is remembered
  KEYS[6] outbox        stream the subject's events (lib/events.lua; written only when one fires)
  ARGV[10] eventsMax    integer  events the outbox holds at most
  Returns: {code, charged integer, balance integer, needed integer, available integer, sources string,
    events integer?, eventsDropped integer?}   balance: the cycle's; available: every active
    source's; sources: what each source gave, in draw order, as a drawn list (lib/grants.lua;
    REPLAYED: the first charge's; '' when none gave); events, eventsDropped: the events the
    call wrote, and those it found no room for, there only when either is not 0
    Codes: OK, INSUFFICIENT (nothing charged), REPLAYED (charged by an earlier call), NO_ACCOUNT,
    OPERATION_REUSED (the id was used with other terms; nothing charged)
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/account.lua"
--@include "lib/cycle.lua"
--@include "lib/journal.lua"
--@include "lib/history.lua"
--@include "lib/operations.lua"
--@include "lib/events.lua"
--@include "lib/debit.lua"

local ctx = prologue_move(KEYS, ARGV)
local operationsKey  = KEYS[5]
local requiredText, optionalText = ARGV[5], ARGV[6]
local required       = tonumber(requiredText)
local optional       = tonumber(optionalText)
local operationId    = ARGV[7]
local operationField = 'o' .. operationId
local operationTag   = ARGV[8] == '1' and ' r' or ''
local operationTtlMs = tonumber(ARGV[9])
local outboxKey, eventsMax = KEYS[6], ARGV[10]

-- cycle and journalGrant stay the stored texts: they are only compared and written back. The
-- extras say whether there are grants (their sum, next roll and front source) or events to
-- read (lib/account.lua).
local v = redis.call('HMGET', ctx.accountKey, ACCOUNT.balance, ACCOUNT.spent, ACCOUNT.cycleEnd, ACCOUNT.cycle,
  ACCOUNT.journalGrant, ACCOUNT.extras)
if not v[1] then
  return { CODE.NO_ACCOUNT, 0, 0, required, 0, '' }
end
local balance, spent, cycle, grant = tonumber(v[1]), tonumber(v[2]), v[4], v[5]
local fromGrants, grantNext, front, hasEvents = account_extras_read(v[6])
local rolls = ctx.now >= tonumber(v[3]) or (grantNext and grantNext >= 0 and ctx.now >= grantNext)
if rolls or hasEvents then
  -- Only a rollover or an account with events may write an event: the outbox.
  ctx.outboxKey, ctx.eventsMax = outboxKey, tonumber(eventsMax)
end
local order, events, a
if rolls then
  -- The whole account, events and spend order with it, brought to now.
  a = cycle_current_account(ctx)
  balance, spent, cycle, grant = a.balance, a.spent, tostring(a.cycle), a.journalGrant and tostring(a.journalGrant)
  order, fromGrants, grantNext = a.grantOrder, a.grantSum, a.grantNext
  front = order and string.match(order, '^%S+')
elseif hasEvents then
  events = redis.call('HGET', ctx.accountKey, ACCOUNT.events) or nil
end
if not front then
  fromGrants = 0
end
local available = balance + fromGrants

local earlier, operations
if operationId ~= '' then
  earlier, operations = operations_read(operationsKey, operationField)
end

local refusal, terms
if operationId ~= '' then
  terms = requiredText .. ':' .. optionalText
end
if earlier then
  local charged, earlierTerms = string.match(earlier, '^%d+ (%d+) ?(%S*)')
  -- An entry kept from before terms were stored has none: it replays.
  if earlierTerms ~= '' and earlierTerms ~= terms then
    refusal = { CODE.OPERATION_REUSED, 0, balance, required, available, '' }
  else
    local replayed = string.match(earlier, '^%d+ %d+ %S+ %d+ (%S+)')
    refusal = { CODE.REPLAYED, tonumber(charged), balance, required, available, replayed ~= '-' and replayed or '' }
  end
elseif available < required then
  refusal = { CODE.INSUFFICIENT, 0, balance, required, available, '' }
end

-- Every check has run: the writes, starting with the rollover whatever the outcome.
if a then
  cycle_save(ctx, a)
  events = a.events
end
if refusal then
  return events_trail(ctx, refusal)
end
local charged = required + math.min(optional, available - required)
available = available - charged
-- The amount as text once: the journal, the history and the operation all write it.
local chargedText = charged == required and requiredText or string.format('%d', charged)
local sources = ''
if not front or (front == 'c' and balance >= charged) then
  -- All from the cycle (no grants, or the cycle first and enough): the grants stay as they are.
  balance = balance - charged
  spent = spent + charged
  if events then
    redis.call('HSET', ctx.accountKey, ACCOUNT.balance, balance, ACCOUNT.spent, spent, ACCOUNT.events,
      events_moved(ctx, events, balance, cycle, fromGrants))
  else
    redis.call('HSET', ctx.accountKey, ACCOUNT.balance, balance, ACCOUNT.spent, spent)
  end
  if charged > 0 then
    sources = grants_part_text('c', cycle, chargedText)
    journal_append(ctx, 'charge', chargedText, cycle, operationId, cycle, grant)
  end
else
  -- From the front source alone when it pays it all (the order is not read), else in spend order.
  sources, balance = debit_in_order(ctx, { balance = balance, spent = spent, grantSum = fromGrants, grantNext = grantNext,
    front = front, order = order, events = events, cycle = cycle, journalGrant = grant }, charged, chargedText, 'charge',
    operationId)
end
if operationId ~= '' then
  local nowText = string.format('%d', ctx.now)
  operations_add(operationsKey, operations, operationField, nowText .. ' ' .. chargedText .. ' ' .. terms .. ' 0 '
    .. (sources == '' and '-' or sources) .. operationTag, ctx.now, operationTtlMs, nowText)
end
if charged > 0 then
  history_add(ctx, 's', charged, chargedText)
end
return events_trail(ctx, { CODE.OK, charged, balance, required, available, sources })
