--[[
  charge: take required + optional credits atomically (docs/credits.md): insufficient when the
  balance is below required, else required + min(optional, balance - required). Every charge
  carries an operation id, the caller's or one the library made, kept in the subject's
  operations (lib/operations.lua) with the charge's terms: the same id sent again with the
  same terms (a retry, a command a client resends after a reconnect) is answered with what it
  charged and takes nothing; with other terms it is refused (OPERATION_REUSED). Straight-line: the
  rollover runs only past the cycle's end, and is written only once every check has run
  (whatever the outcome: any call brings the account to its current cycle).
  Layout: movement    KEYS[1-4] account, cycles, journal, history; ARGV[1-4] nowMs, journalTrim, journalBound, historyDays (lib/prologue.lua)
  KEYS[5] operations    hash   the subject's recent operation ids (lib/operations.lua)
  ARGV[5] required      integer  credits that must all be available
  ARGV[6] optional      integer  credits taken as far as the balance allows
  ARGV[7] operationId   string   the operation id; '' keeps no record (resendIds: false)
  ARGV[8] madeByLibrary 0|1      1: the library made the id (kept a shorter while, lib/operations.lua)
  ARGV[9] operationTtlMs integer how long a caller's operation id is remembered
  KEYS[6] outbox        stream the subject's events (lib/events.lua; written only when one fires)
  ARGV[10] eventsMax    integer  events the outbox holds at most
  Returns: {code, charged integer, balance integer, needed integer, events integer, eventsDropped integer}
    Codes: OK, INSUFFICIENT (nothing charged), REPLAYED (charged by an earlier call), NO_ACCOUNT,
    OPERATION_REUSED (the id was charged with other terms; nothing charged)
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/account.lua"
--@include "lib/cycle.lua"
--@include "lib/journal.lua"
--@include "lib/history.lua"
--@include "lib/operations.lua"
--@include "lib/events.lua"

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
local v = redis.call('HMGET', ctx.accountKey, ACCOUNT.balance, ACCOUNT.spent, ACCOUNT.cycleEnd, ACCOUNT.cycle,
  ACCOUNT.journalGrant, ACCOUNT.events)
if not v[1] then
  return { CODE.NO_ACCOUNT, 0, 0, required, 0, 0 }
end
local balance, spent, cycle, grant, events = tonumber(v[1]), tonumber(v[2]), v[4], v[5], v[6]
local a
if ctx.now >= tonumber(v[3]) then
  a = cycle_current_account(ctx)
  balance, spent, cycle, grant = a.balance, a.spent, tostring(a.cycle), a.journalGrant and tostring(a.journalGrant)
end

local earlier, operations
if operationId ~= '' then
  earlier, operations = operations_read(operationsKey, operationField)
end

local refusal, terms
if operationId ~= '' then
  terms = requiredText .. ':' .. optionalText
end
if earlier then
  local charged, earlierTerms = string.match(earlier, '^%d+ (%d+) ?([%d:]*)')
  -- An entry kept from before terms were stored has none: it replays.
  if earlierTerms ~= '' and earlierTerms ~= terms then
    refusal = { CODE.OPERATION_REUSED, 0, balance, required }
  else
    refusal = { CODE.REPLAYED, tonumber(charged), balance, required }
  end
elseif balance < required then
  refusal = { CODE.INSUFFICIENT, 0, balance, required }
end

-- Every check has run: the writes, starting with the rollover whatever the outcome.
if a then
  cycle_save(ctx, a)
  events = a.events
end
if refusal then
  refusal[5], refusal[6] = events_reply(ctx)
  return refusal
end
local charged = required + math.min(optional, balance - required)
balance = balance - charged
spent = spent + charged
-- The amount as text once: the journal, the history and the operation all write it.
local chargedText = tostring(charged)
if events then
  redis.call('HSET', ctx.accountKey, ACCOUNT.balance, balance, ACCOUNT.spent, spent, ACCOUNT.events,
    events_moved(ctx, events, balance, cycle))
else
  redis.call('HSET', ctx.accountKey, ACCOUNT.balance, balance, ACCOUNT.spent, spent)
end
if operationId ~= '' then
  local nowText = string.format('%d', ctx.now)
  operations_add(operationsKey, operations, operationField, nowText .. ' ' .. chargedText .. ' ' .. terms .. operationTag,
    ctx.now, operationTtlMs, nowText)
end
if charged > 0 then
  journal_append(ctx, 'charge', chargedText, cycle, operationId, cycle, grant)
  history_add(ctx, 's', charged, chargedText)
end
return { CODE.OK, charged, balance, required, events_reply(ctx) }
