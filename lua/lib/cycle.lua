--[[
  cycle: billing-cycle rollover (docs/accounts.md#billing-cycles). Rollover is lazy and atomic: a script that moves
  credits first brings the account to the cycle that contains "now"; a new cycle archives the
  old one's summary and opens with the next allowance. Unused credits never roll over.
  Ended cycles live in the cycles hash under '<cycle>:<field>' (ENDED_CYCLE) and keep
  unused + spent + held + refunded == allowance while their holds settle.
  ctx fields used: accountKey, cyclesKey, now; on an account with events, those of lib/events.lua.
  A rollover is worked out in the account table a and written only by cycle_save, which a
  script calls once every check that may refuse has passed (docs/scripts.md: no write before
  the last check); a script that refuses leaves the rollover to the next call, which works it
  out the same. The hot scripts read the few fields they need themselves and call
  cycle_current_account only when the cycle has ended: this file costs nothing on their common
  path.
]]
--@include "account.lua"
--@include "calendar.lua"
--@include "events.lua"

--@const
local ENDED_CYCLE = { allowance = 'a', unused = 'b', spent = 's', held = 'h', refunded = 'r',
  cycleStart = 'cs', cycleEnd = 'ce', plannedEnd = 'pe' }

-- Archive the current cycle of a, ended at endedMs (its planned end unless a new cycle was
-- started early), and open [startMs, endMs) with the next allowance, in a: cycle_save writes
-- both. The planned end is stored only when it differs from the end.
local function cycle_open(a, startMs, endMs, endedMs)
  local p = a.cycle .. ':'
  local archive = a.archive or {}
  endedMs = endedMs or a.cycleEnd
  for _, v in ipairs({ p .. ENDED_CYCLE.allowance, a.allowance, p .. ENDED_CYCLE.unused, a.balance,
    p .. ENDED_CYCLE.spent, a.spent, p .. ENDED_CYCLE.held, a.held, p .. ENDED_CYCLE.refunded, 0,
    p .. ENDED_CYCLE.cycleStart, a.cycleStart, p .. ENDED_CYCLE.cycleEnd, endedMs }) do
    archive[#archive + 1] = v
  end
  if endedMs ~= a.cycleEnd then
    archive[#archive + 1] = p .. ENDED_CYCLE.plannedEnd
    archive[#archive + 1] = a.cycleEnd
  end
  a.archive = archive
  a.cycle = a.cycle + 1
  a.allowance = a.nextAllowance
  a.balance = a.nextAllowance
  a.spent = 0
  a.held = 0
  a.cycleStart = startMs
  a.cycleEnd = endMs
end

-- Write what cycle_open and cycle_reanchor worked out in a, if anything: the ended cycles'
-- summaries and the account's new cycle. Call it before a script's first write.
local function cycle_save(ctx, a)
  if not a.archive then
    return
  end
  local archive = a.archive
  redis.call('HSET', ctx.cyclesKey, unpack(archive))
  a.archive = nil
  account_write(ctx.accountKey, a, { 'cycle', 'allowance', 'balance', 'spent', 'held', 'cycleStart', 'cycleEnd',
    'anchor', 'interval' })
  if a.events then
    events_cycles_opened(ctx, a, archive)
  end
end

local function cycle_unit(a)
  return string.sub(a.interval, 1, 1), tonumber(string.sub(a.interval, 2))
end

-- Bring a to the cycle that contains ctx.now. Returns whether a new cycle opened.
local function cycle_roll(ctx, a)
  if ctx.now < a.cycleEnd then
    return false
  end
  local unit, length = cycle_unit(a)
  local _, startMs, endMs = current_period(a.anchor, unit, length, ctx.now)
  cycle_open(a, startMs, endMs)
  return true
end

-- The whole account in the cycle that contains ctx.now, not yet saved (cycle_save); nil when
-- there is no account. The hot scripts call it only past the cycle's end: its helpers are
-- built only then.
--@rare
local function cycle_current_account(ctx)
  local a = account_load(ctx.accountKey)
  if a then
    cycle_roll(ctx, a)
  end
  return a
end

-- Start a new cycle at ctx.now (a billing webhook, docs/credits.md): the current cycle (a is
-- rolled to the cycle containing now) ends here and is archived so, with its planned end kept
-- as plannedEnd (cycles never overlap), and the account is
-- re-anchored at now, optionally with a new interval ('' / 0 keep the current unit / length).
-- Written by cycle_save.
local function cycle_reanchor(ctx, a, unit, length)
  local oldUnit, oldLength = cycle_unit(a)
  if unit == '' then
    unit = oldUnit
  end
  if length == 0 then
    length = oldLength
  end
  a.anchor = ctx.now
  a.interval = unit .. length
  cycle_open(a, ctx.now, period_start(ctx.now, unit, length, 1), ctx.now)
end

-- The ended cycles as a list of attribute tables, oldest first (the one decoder of them),
-- with those a rollover worked out and did not write yet (a.archive) when a is given.
local function cycles_load(cyclesKey, a)
  local flat = redis.call('HGETALL', cyclesKey)
  for _, v in ipairs(a and a.archive or {}) do
    flat[#flat + 1] = v
  end
  local attribute, byId, ids = {}, {}, {}
  for name, field in pairs(ENDED_CYCLE) do
    attribute[field] = name
  end
  for i = 1, #flat, 2 do
    local id, field = string.match(flat[i], '^(%d+):(.+)$')
    id = tonumber(id)
    if not byId[id] then
      byId[id] = { id = id }
      ids[#ids + 1] = id
    end
    byId[id][attribute[field]] = tonumber(flat[i + 1])
  end
  table.sort(ids)
  local list = {}
  for i, id in ipairs(ids) do
    list[i] = byId[id]
  end
  return list
end
