--[[
  listGrants: an account's sources of credits as they stand now (docs/grants.md#listing): the
  current cycle's allowance first ('cycle:<n>'), then the live grants in spend order, then the
  pending ones by effectiveAt; with ended, the ended grants (newest ended first) and the ended
  cycles (newest first). Writes nothing: a roll that is due is worked out, not saved.
  Layout: look        KEYS[1] account, ARGV[1] nowMs (lib/prologue.lua)
  KEYS[2] cycles        hash   ended cycles and ended grants, grants' reasons
  ARGV[2] ended         0|1      also list the ended sources
  Returns: {code, grants json}   grants: a list of sources, each {grantId, kind, priority,
    amount, remaining, spent, held, expired, voided, refundedAfterEnd, effectiveAt,
    expiresAt (absent: never), createdAt, endedAt (absent: live), status, reason (absent: none)}
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/cycle.lua"

local ctx = prologue_look(KEYS, ARGV)
ctx.cyclesKey = KEYS[2]
local ended = ARGV[2] == '1'

local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end

local STATUS = { e = 'expired', v = 'voided', u = 'used' }
local function source_of(g, status)
  return { grantId = 'g' .. g.n, kind = g.kind, priority = g.priority, amount = g.amount, remaining = g.remaining,
    spent = g.spent, held = g.held, expired = g.expired, voided = g.voided, refundedAfterEnd = g.refundedAfterEnd,
    effectiveAt = g.effectiveAt, expiresAt = g.expiresAt > 0 and g.expiresAt or nil, createdAt = g.createdAt,
    endedAt = g.endedAt, status = status, n = g.n }
end

local list = { { grantId = 'cycle:' .. a.cycle, kind = 'plan', priority = GRANT_PLAN_PRIORITY, amount = a.allowance,
  remaining = a.balance, spent = a.spent, held = a.held, expired = 0, voided = 0, refundedAfterEnd = 0,
  effectiveAt = a.cycleStart, expiresAt = a.cycleEnd, createdAt = a.cycleStart,
  status = a.balance > 0 and 'active' or 'used' } }
local grants = grants_of(a)
for token in string.gmatch(a.grantOrder or '', '%d+') do
  local g = grants[tonumber(token)]
  list[#list + 1] = source_of(g, g.remaining > 0 and 'active' or 'used')
end
local pending = {}
for _, g in pairs(grants) do
  if g.effectiveAt > ctx.now then
    pending[#pending + 1] = g
  end
end
table.sort(pending, function(x, y)
  if x.effectiveAt ~= y.effectiveAt then
    return x.effectiveAt < y.effectiveAt
  end
  return x.n < y.n
end)
for _, g in ipairs(pending) do
  list[#list + 1] = source_of(g, 'pending')
end

if ended then
  local gone = {}
  for n in string.gmatch(redis.call('HGET', ctx.cyclesKey, GRANT_ARCHIVE.ended) or '', '%d+') do
    local record = redis.call('HGET', ctx.cyclesKey, GRANT_ARCHIVE.record .. n)
    if record then
      gone[#gone + 1] = grant_archived_parse(tonumber(n), record)
    end
  end
  for _, g in ipairs(a.grantEnded or {}) do
    gone[#gone + 1] = g
  end
  table.sort(gone, function(x, y)
    if x.endedAt ~= y.endedAt then
      return x.endedAt > y.endedAt
    end
    return x.n > y.n
  end)
  for _, g in ipairs(gone) do
    list[#list + 1] = source_of(g, STATUS[g.status])
  end
  local cycles = cycles_load(ctx.cyclesKey, a)
  for i = #cycles, 1, -1 do
    local c = cycles[i]
    list[#list + 1] = { grantId = 'cycle:' .. c.id, kind = 'plan', priority = GRANT_PLAN_PRIORITY, amount = c.allowance,
      remaining = 0, spent = c.spent, held = c.held, expired = c.unused, voided = 0, refundedAfterEnd = c.refunded,
      effectiveAt = c.cycleStart, expiresAt = c.plannedEnd or c.cycleEnd, createdAt = c.cycleStart, endedAt = c.cycleEnd,
      status = 'expired' }
  end
end

-- Reasons, in one read.
local fields, withReason = {}, {}
for _, s in ipairs(list) do
  if s.n then
    fields[#fields + 1] = GRANT_ARCHIVE.reason .. s.n
    withReason[#withReason + 1] = s
  end
  s.n = nil
end
if #fields > 0 then
  local reasons = redis.call('HMGET', ctx.cyclesKey, unpack(fields))
  for i, s in ipairs(withReason) do
    s.reason = reasons[i] or nil
  end
end
return { CODE.OK, cjson.encode(list) }
