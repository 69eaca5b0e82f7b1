--[[
  listGrants: an account's sources of credits (docs/grants.md#listing): the current cycle's
  allowance first ('cycle:<n>'), then the live grants in spend order, then the pending ones by
  effectiveAt; with ended, the ended grants (newest ended first) and the ended cycles (newest
  first). Brings the cycle and the grants to now first, as every movement does, and writes
  that roll (with the journal entries of the grants that expire on the way), nothing else.
  Layout: movement    KEYS[1-4] account, cycles, journal, history; ARGV[1-4] nowMs, journalTrim, journalBound, historyDays (lib/prologue.lua)
  ARGV[5] ended         0|1      also list the ended sources
  KEYS[5] outbox        stream the subject's events (lib/events.lua; written when the roll fires one)
  ARGV[6] eventsMax     integer  events the outbox holds at most
  Returns: {code, grants json, events integer, eventsDropped integer}   grants: a list of sources, each
    {grantId, kind, priority, amount, remaining, spent, held, expired, voided, refundedAfterEnd,
    effectiveAt, expiresAt (absent: never), createdAt, endedAt (absent: live), status, reason
    (absent: none)}; events, eventsDropped: the events the roll wrote, and those it found no room for
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/cycle.lua"
--@include "lib/events.lua"

local ctx = prologue_move(KEYS, ARGV)
local ended = ARGV[5] == '1'
ctx.outboxKey, ctx.eventsMax = KEYS[5], tonumber(ARGV[6])

local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '', 0, 0 }
end

local list = { { grantId = 'cycle:' .. a.cycle, kind = 'plan', priority = GRANT_PLAN_PRIORITY, amount = a.allowance,
  remaining = a.balance, spent = a.spent, held = a.held, expired = 0, voided = 0, refundedAfterEnd = 0,
  effectiveAt = a.cycleStart, expiresAt = a.cycleEnd, createdAt = a.cycleStart,
  status = a.balance > 0 and 'active' or 'used' } }
for _, g in ipairs(grants_list(ctx, a, ended)) do
  list[#list + 1] = g
end
if ended then
  local cycles = cycles_load(ctx.cyclesKey, a)
  for i = #cycles, 1, -1 do
    local c = cycles[i]
    list[#list + 1] = { grantId = 'cycle:' .. c.id, kind = 'plan', priority = GRANT_PLAN_PRIORITY, amount = c.allowance,
      remaining = 0, spent = c.spent, held = c.held, expired = c.unused, voided = 0, refundedAfterEnd = c.refunded,
      effectiveAt = c.cycleStart, expiresAt = c.plannedEnd or c.cycleEnd, createdAt = c.cycleStart, endedAt = c.cycleEnd,
      status = 'expired' }
  end
end
cycle_save(ctx, a)
return { CODE.OK, cjson.encode(list), events_reply(ctx) }
