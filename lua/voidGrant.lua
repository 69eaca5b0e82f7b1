--[[
  voidGrant: void a grant (docs/grants.md#grant-void-adjust-refund): what it has left is voided now, and what it
  holds stays held and is voided when refunded. A grant that has ended already (expired,
  voided, used and archived) voids nothing. The operation id carries the grant: sent again it
  answers the first void (REPLAYED), for another grant it is refused (OPERATION_REUSED).
  Layout: movement    KEYS[1-4] account, cycles, journal, history; ARGV[1-4] nowMs, journalTrim, journalBound, historyDays (lib/prologue.lua)
  KEYS[5] operations    hash   the subject's recent operation ids (lib/operations.lua)
  ARGV[5] grant         integer  the grant's number (grant id 'g<n>')
  ARGV[6] operationId   string   the caller's operation id
  ARGV[7] operationTtlMs integer how long the operation id is remembered
  KEYS[6] outbox        stream the subject's events (lib/events.lua; written only when one fires)
  ARGV[8] eventsMax     integer  events the outbox holds at most
  Returns: {code, voided integer, events integer, eventsDropped integer}
    events, eventsDropped: the events the call wrote, and those it found no room for
    Codes: OK, REPLAYED (voided by an earlier call: voided is what it voided), NO_ACCOUNT,
    NO_GRANT (never issued, or no longer kept), OPERATION_REUSED
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/cycle.lua"
--@include "lib/operations.lua"
--@include "lib/events.lua"

local ctx = prologue_move(KEYS, ARGV)
local operationsKey = KEYS[5]
local grantText, operationId, operationTtlMs = ARGV[5], ARGV[6], tonumber(ARGV[7])
local n = tonumber(grantText)
ctx.outboxKey, ctx.eventsMax = KEYS[6], tonumber(ARGV[8])

local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0, 0 }
end
local terms = 'void:g' .. grantText
local operationField = 'o' .. operationId
local earlier, operations = operations_read(operationsKey, operationField)

local reply
local g = grants_of(a)[n]
if earlier then
  local voided, earlierTerms = string.match(earlier, '^%d+ (%d+) (%S*)')
  reply = earlierTerms == terms and { CODE.REPLAYED, tonumber(voided) } or { CODE.OPERATION_REUSED, 0 }
elseif not g and not redis.call('HGET', ctx.cyclesKey, GRANT_ARCHIVE.record .. grantText) then
  -- Ended in this call's roll (not saved yet), or ended before; else never issued or dropped.
  local endedNow = false
  for _, e in ipairs(a.grantEnded or {}) do
    endedNow = endedNow or e.n == n
  end
  if not endedNow then
    reply = { CODE.NO_GRANT, 0 }
  end
end
cycle_save(ctx, a)
if reply then
  reply[3], reply[4] = events_reply(ctx)
  return reply
end

-- Every check has run: the writes (the roll saved first: its events come before grant.voided).
local voided = 0
if g then
  voided = grants_end(a, g, 'v', ctx.now, operationId)
  grants_refresh(ctx, a)
end
cycle_save(ctx, a)
local nowText = string.format('%d', ctx.now)
operations_add(operationsKey, operations, operationField, nowText .. ' ' .. voided .. ' ' .. terms, ctx.now, operationTtlMs, nowText)
return { CODE.OK, voided, events_reply(ctx) }
