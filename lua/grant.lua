--[[
  grant: add a credit grant to an account (docs/grants.md): amount credits of kind, spent in
  the spend order by priority, live on [effectiveAt, expiresAt). An account holds at most
  grantsMax live or pending grants: used ones (nothing left, nothing held) are archived to
  make room, oldest first, when that is enough; else GRANT_LIMIT. The operation id carries
  the terms: sent again with the same terms it answers the first grant (REPLAYED), with
  other terms it is refused (OPERATION_REUSED).
  Layout: movement    KEYS[1-4] account, cycles, journal, history; ARGV[1-4] nowMs, journalTrim, journalBound, historyDays (lib/prologue.lua)
  KEYS[5] operations    hash   the subject's recent operation ids (lib/operations.lua)
  ARGV[5] amount        integer  credits granted
  ARGV[6] kind          'paid'|'promotional'|'adjustment'
  ARGV[7] priority      integer  lower is spent first (0..1000)
  ARGV[8] effectiveAt   integer  when it starts to count (ms); -1: now
  ARGV[9] expiresAt     integer  when what is left expires (ms); 0: never
  ARGV[10] reason       string   why ('' for none), kept with the grant
  ARGV[11] operationId  string   the caller's operation id
  ARGV[12] operationTtlMs integer how long the operation id is remembered
  ARGV[13] grantsMax    integer  live or pending grants an account may hold
  KEYS[6] outbox        stream the subject's events (lib/events.lua; written only when one fires)
  ARGV[14] eventsMax    integer  events the outbox holds at most
  Returns: {code, grantId string, events integer, eventsDropped integer}   grantId: '' unless OK or REPLAYED;
    events, eventsDropped: the events the call wrote, and those it found no room for
    Codes: OK, REPLAYED (granted by an earlier call with the same terms), NO_ACCOUNT,
    OPERATION_REUSED, GRANT_LIMIT (nothing granted), BAD_GRANT (expiresAt not after
    effectiveAt and now; nothing granted)
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/cycle.lua"
--@include "lib/operations.lua"
--@include "lib/events.lua"

local ctx = prologue_move(KEYS, ARGV)
local operationsKey = KEYS[5]
local amountText, kind, priorityText = ARGV[5], ARGV[6], ARGV[7]
local effectiveText, expiresText, reason = ARGV[8], ARGV[9], ARGV[10]
local operationId, operationTtlMs, grantsMax = ARGV[11], tonumber(ARGV[12]), tonumber(ARGV[13])
local amount, priority, expiresAt = tonumber(amountText), tonumber(priorityText), tonumber(expiresText)
local effectiveAt = tonumber(effectiveText)
ctx.outboxKey, ctx.eventsMax = KEYS[6], tonumber(ARGV[14])

local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '', 0, 0 }
end
if effectiveAt < 0 then
  effectiveAt, effectiveText = ctx.now, ''
end
-- The terms an operation id carries (an effectiveAt left to now is '': a retry later is the same grant).
local terms = 'grant:' .. amountText .. ':' .. kind .. ':' .. priorityText .. ':' .. effectiveText .. ':'
  .. (expiresAt > 0 and expiresText or '')
local operationField = 'o' .. operationId
local earlier, operations = operations_read(operationsKey, operationField)

local reply
if earlier then
  local n, earlierTerms = string.match(earlier, '^%d+ (%d+) (%S*)')
  reply = earlierTerms == terms and { CODE.REPLAYED, 'g' .. n } or { CODE.OPERATION_REUSED, '' }
elseif expiresAt > 0 and expiresAt <= math.max(effectiveAt, ctx.now) then
  reply = { CODE.BAD_GRANT, '' }
elseif not grants_room(ctx, a, grantsMax) then
  reply = { CODE.GRANT_LIMIT, '' }
end
cycle_save(ctx, a)
if reply then
  reply[3], reply[4] = events_reply(ctx)
  return reply
end

-- Every check has run: the writes (the roll saved first: its events come before grant.added).
local n = grants_add(ctx, a, kind, priority, effectiveAt, expiresAt, amount, operationId)
cycle_save(ctx, a)
if reason ~= '' then
  redis.call('HSET', ctx.cyclesKey, GRANT_ARCHIVE.reason .. n, reason)
end
local nowText = string.format('%d', ctx.now)
operations_add(operationsKey, operations, operationField, nowText .. ' ' .. n .. ' ' .. terms, ctx.now, operationTtlMs, nowText)
return { CODE.OK, 'g' .. n, events_reply(ctx) }
