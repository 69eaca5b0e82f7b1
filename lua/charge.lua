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
  Returns: {code, charged integer, balance integer, needed integer, available integer, events integer,
    eventsDropped integer, ...sources {grantId string, amount integer}}   balance: the cycle's;
    available: every active source's; events, eventsDropped: the events the call wrote, and
    those it found no room for; sources: what each source gave, in draw order (REPLAYED: the
    first charge's)
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

-- The charge of an account with grants: drawn in spend order (lib/grants.lua), written, and
-- journalled one entry per source. Returns the drawn list and the cycle's new balance.
local function charges_from_sources(ctx, order, balance, spent, charged, fromGrants, cycle, grant, operationId, events)
  local parts, left, taken, fields = grants_draw(ctx.accountKey, order, balance, charged, false)
  local fromCycle = balance - left
  fields[#fields + 1], fields[#fields + 2] = ACCOUNT.balance, left
  fields[#fields + 1], fields[#fields + 2] = ACCOUNT.spent, spent + fromCycle
  fields[#fields + 1], fields[#fields + 2] = ACCOUNT.grantSum, string.format('%d', fromGrants - taken)
  if events then
    fields[#fields + 1], fields[#fields + 2] = ACCOUNT.events, events_moved(ctx, events, left, cycle, fromGrants - taken)
  end
  redis.call('HSET', ctx.accountKey, unpack(fields))
  for i = 1, #parts, 2 do
    local amount = string.format('%d', parts[i + 1])
    if parts[i] == 'c' then
      grant = journal_append(ctx, 'charge', amount, cycle, operationId, cycle, grant)
    else
      journal_source(ctx, 'charge', amount, cycle, operationId, 'g' .. parts[i])
    end
  end
  return #parts > 0 and grants_parts_text(parts, cycle) or '-', left
end

local ctx = prologue_move(KEYS, ARGV)
local operationsKey  = KEYS[5]
local requiredText, optionalText = ARGV[5], ARGV[6]
local required       = tonumber(requiredText)
local optional       = tonumber(optionalText)
local operationId    = ARGV[7]
local operationField = 'o' .. operationId
local operationTag   = ARGV[8] == '1' and ' r' or ''
local operationTtlMs = tonumber(ARGV[9])
ctx.outboxKey, ctx.eventsMax = KEYS[6], tonumber(ARGV[10])

-- cycle and journalGrant stay the stored texts: they are only compared and written back.
-- order is there only while the account has grants (lib/grants.lua).
local v = redis.call('HMGET', ctx.accountKey, ACCOUNT.balance, ACCOUNT.spent, ACCOUNT.cycleEnd, ACCOUNT.cycle,
  ACCOUNT.journalGrant, ACCOUNT.grantOrder, ACCOUNT.grantSum, ACCOUNT.grantNext, ACCOUNT.events)
if not v[1] then
  return { CODE.NO_ACCOUNT, 0, 0, required, 0, 0, 0 }
end
local balance, spent, cycle, grant, order, events = tonumber(v[1]), tonumber(v[2]), v[4], v[5], v[6], v[9]
local fromGrants = 0
local a
if ctx.now >= tonumber(v[3]) or (order and ctx.now >= tonumber(v[8]) and tonumber(v[8]) >= 0) then
  a = cycle_current_account(ctx)
  balance, spent, cycle, grant = a.balance, a.spent, tostring(a.cycle), a.journalGrant and tostring(a.journalGrant)
  order = a.grantOrder
  if order then
    fromGrants = a.grantSum
  end
elseif order then
  fromGrants = tonumber(v[7])
end
local available = balance + fromGrants

local earlier, operations
if operationId ~= '' then
  earlier, operations = operations_read(operationsKey, operationField)
end

local refusal, terms, replayed
if operationId ~= '' then
  terms = requiredText .. ':' .. optionalText
end
if earlier then
  local charged, earlierTerms = string.match(earlier, '^%d+ (%d+) ?(%S*)')
  -- An entry kept from before terms were stored has none: it replays.
  if earlierTerms ~= '' and earlierTerms ~= terms then
    refusal = { CODE.OPERATION_REUSED, 0, balance, required, available }
  else
    refusal = { CODE.REPLAYED, tonumber(charged), balance, required, available }
    replayed = string.match(earlier, '^%d+ %d+ %S+ %d+ (%S+)')
  end
elseif available < required then
  refusal = { CODE.INSUFFICIENT, 0, balance, required, available }
end

-- Every check has run: the writes, starting with the rollover whatever the outcome.
if a then
  cycle_save(ctx, a)
  events = a.events
end
if refusal then
  refusal[6], refusal[7] = events_reply(ctx)
  return grants_sources_reply(refusal, replayed)
end
local charged = required + math.min(optional, available - required)
available = available - charged
-- The amount as text once: the journal, the history and the operation all write it.
local chargedText = tostring(charged)
local sources, reply
if not order then
  balance = balance - charged
  spent = spent + charged
  if events then
    redis.call('HSET', ctx.accountKey, ACCOUNT.balance, balance, ACCOUNT.spent, spent, ACCOUNT.events,
      events_moved(ctx, events, balance, cycle, 0))
  else
    redis.call('HSET', ctx.accountKey, ACCOUNT.balance, balance, ACCOUNT.spent, spent)
  end
  -- All from the cycle: the reply is built as is, with no drawn list to read back.
  reply = { CODE.OK, charged, balance, required, available, events_reply(ctx) }
  sources = '-'
  if charged > 0 then
    sources = 'c' .. cycle .. '=' .. chargedText
    reply[8], reply[9] = 'cycle:' .. cycle, charged
    journal_append(ctx, 'charge', chargedText, cycle, operationId, cycle, grant)
  end
else
  sources, balance = charges_from_sources(ctx, order, balance, spent, charged, fromGrants, cycle, grant, operationId,
    events)
end
if operationId ~= '' then
  local nowText = string.format('%d', ctx.now)
  operations_add(operationsKey, operations, operationField,
    nowText .. ' ' .. chargedText .. ' ' .. terms .. ' 0 ' .. sources .. operationTag, ctx.now, operationTtlMs, nowText)
end
if charged > 0 then
  history_add(ctx, 's', charged, chargedText)
end
if reply then
  return reply
end
reply = { CODE.OK, charged, balance, required, available, events_reply(ctx) }
return grants_sources_reply(reply, sources)
