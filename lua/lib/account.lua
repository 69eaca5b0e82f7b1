--[[
  account: load an account hash and roll its billing cycle over lazily (SPEC §3).
  Account hash fields (short names keep idle accounts small):
    plan        plan name              alw   allowance of the current cycle
    nalw        allowance from the next cycle on (plan changes apply there, SPEC §3)
    bal spent held                     credits of the current cycle: bal + spent + held == alw
    cyc         current cycle number (1, 2, ...)   cs ce  current cycle start / end (ms)
    anc unit len  cycle spec: anchor (ms), 'd' days or 'm' calendar months, interval length
    rpa rpw     requests per window on surface api / web (counts: lua/lib/window.lua)
    cap         active-job cap         maxv  max videos per job   bulk  1 if api bulk jobs allowed
  Ended cycles are archived in the cycles hash as "<cyc>:<field>" with fields
    a allowance, b unused balance, s spent, h held, r refunded, cs, ce
  and keep b + s + h + r == a while their jobs settle.
  ctx fields used: accountKey, cyclesKey, now (+ journal fields, see journal.lua).
]]
--@include "journal.lua"
--@include "calendar.lua"

local ACCOUNT_TEXT_FIELDS = { plan = true, unit = true }

local function account_load(ctx)
  local flat = redis.call('HGETALL', ctx.accountKey)
  if #flat == 0 then
    return nil
  end
  local a = {}
  for i = 1, #flat, 2 do
    local field = flat[i]
    if ACCOUNT_TEXT_FIELDS[field] then
      a[field] = flat[i + 1]
    else
      a[field] = tonumber(flat[i + 1])
    end
  end
  return a
end

-- Archive the current cycle and open [startMs, endMs) with the next allowance.
local function account_open_cycle(ctx, a, startMs, endMs)
  local rcall = redis.call
  local p = a.cyc .. ':'
  rcall('HSET', ctx.cyclesKey, p .. 'a', a.alw, p .. 'b', a.bal, p .. 's', a.spent,
    p .. 'h', a.held, p .. 'r', 0, p .. 'cs', a.cs, p .. 'ce', a.ce)
  a.cyc = a.cyc + 1
  a.alw = a.nalw
  a.bal = a.nalw
  a.spent = 0
  a.held = 0
  a.cs = startMs
  a.ce = endMs
  rcall('HSET', ctx.accountKey, 'cyc', a.cyc, 'alw', a.alw, 'bal', a.bal, 'spent', 0,
    'held', 0, 'cs', startMs, 'ce', endMs)
  journal_append(ctx, 'grant', a.alw, a.cyc, '')
end

-- Bring the account to the cycle that contains ctx.now. Unused credits never roll over.
local function account_roll(ctx, a)
  if ctx.now < a.ce then
    return false
  end
  local _, startMs, endMs = current_period(a.anc, a.unit, a.len, ctx.now)
  account_open_cycle(ctx, a, startMs, endMs)
  return true
end

local CREDIT_FIELDS = { 'bal', 'spent', 'held', 'cyc', 'ce' }

-- The account in the cycle that contains ctx.now, reading only the credit fields and the
-- extra ones the caller names (HGETALL of the whole hash costs several times more), unless
-- the cycle has ended: then the whole account is loaded and rolled over. nil: no account.
local function account_current(ctx, extra)
  local fields = { unpack(CREDIT_FIELDS) }
  for _, field in ipairs(extra or {}) do
    fields[#fields + 1] = field
  end
  local values = redis.call('HMGET', ctx.accountKey, unpack(fields))
  if not values[1] then
    return nil
  end
  if ctx.now >= tonumber(values[5]) then
    local a = account_load(ctx)
    account_roll(ctx, a)
    return a
  end
  local a = {}
  for i, field in ipairs(fields) do
    if ACCOUNT_TEXT_FIELDS[field] then
      a[field] = values[i]
    else
      a[field] = tonumber(values[i])
    end
  end
  return a
end

-- Write balance / spent / held back after a credit movement.
local function account_save_credits(ctx, a)
  redis.call('HSET', ctx.accountKey, 'bal', a.bal, 'spent', a.spent, 'held', a.held)
end

-- Start a new cycle at ctx.now (SPEC §3 billing webhook): the account is re-anchored there,
-- optionally with a new interval ('' / 0 keep the current unit / length).
local function account_reanchor(ctx, a, unit, length)
  if unit ~= '' then
    a.unit = unit
  end
  if length > 0 then
    a.len = length
  end
  a.anc = ctx.now
  redis.call('HSET', ctx.accountKey, 'anc', a.anc, 'unit', a.unit, 'len', a.len)
  account_open_cycle(ctx, a, ctx.now, period_start(a.anc, a.unit, a.len, 1))
end
