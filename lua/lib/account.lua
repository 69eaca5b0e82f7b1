--[[
  account: load an account, write it back, and roll its billing cycle over lazily (SPEC §3).
  Scripts work with these attributes; the hash stores each under a one- or two-letter field
  (ACCOUNT_FIELD), which keeps an idle account small:
    plan        plan name              alw   allowance of the current cycle
    nalw        allowance from the next cycle on (plan changes apply there, SPEC §3)
    bal spent held                     credits of the current cycle: bal + spent + held == alw
    cyc         current cycle number (1, 2, ...)   cs ce  current cycle start / end (ms)
    anc         cycle anchor (ms)      unit len  interval: 'd' days or 'm' calendar months, and
                how many (stored together as "<unit><len>", e.g. "m1")
    rpa rpw     requests per window on surface api / web (counts: lua/lib/window.lua)
    cap         active-job cap         maxv  max videos per job   bulk  1 if api bulk jobs allowed
    jg          last cycle whose opening grant is in the journal (lua/lib/journal.lua)
  Ended cycles are archived in the cycles hash as "<cyc>:<field>" with fields
    a allowance, b unused balance, s spent, h held, r refunded, cs, ce
  and keep b + s + h + r == a while their jobs settle.
  ctx fields used: accountKey, cyclesKey, now (+ journal fields, see journal.lua).
]]
--@include "journal.lua"
--@include "calendar.lua"

local ACCOUNT_FIELD = {
  plan = 'p', alw = 'a', nalw = 'na', bal = 'b', spent = 's', held = 'h', cyc = 'c', cs = 'cs',
  ce = 'ce', anc = 'an', interval = 'iv', rpa = 'ra', rpw = 'rw', cap = 'jc', maxv = 'mv', bulk = 'bk',
  jg = 'jg',
}
local ACCOUNT_ATTRIBUTE = {
  p = 'plan', a = 'alw', na = 'nalw', b = 'bal', s = 'spent', h = 'held', c = 'cyc', cs = 'cs',
  ce = 'ce', an = 'anc', iv = 'interval', ra = 'rpa', rw = 'rpw', jc = 'cap', mv = 'maxv', bk = 'bulk',
  jg = 'jg',
}

-- Set attribute `name` of table a from its stored value.
local function account_set(a, name, stored)
  if name == 'plan' then
    a.plan = stored
  elseif name == 'interval' then
    a.unit = string.sub(stored, 1, 1)
    a.len = tonumber(string.sub(stored, 2))
  else
    a[name] = tonumber(stored)
  end
end

local function account_load(ctx)
  local flat = redis.call('HGETALL', ctx.accountKey)
  if #flat == 0 then
    return nil
  end
  local a = {}
  for i = 1, #flat, 2 do
    account_set(a, ACCOUNT_ATTRIBUTE[flat[i]], flat[i + 1])
  end
  return a
end

-- Store the named attributes of a.
local function account_write(ctx, a, names)
  local args = {}
  for _, name in ipairs(names) do
    args[#args + 1] = ACCOUNT_FIELD[name]
    if name == 'interval' then
      args[#args + 1] = a.unit .. a.len
    else
      args[#args + 1] = a[name]
    end
  end
  redis.call('HSET', ctx.accountKey, unpack(args))
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
  account_write(ctx, a, { 'cyc', 'alw', 'bal', 'spent', 'held', 'cs', 'ce' })
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

-- The account in the cycle that contains ctx.now. Reads only the credit attributes (and, with
-- withPlan, the plan's limits for job creation): HGETALL of the whole hash costs several times
-- more. Past the cycle end the whole account is loaded and rolled over. nil: no account.
-- The field names are the stored ones of ACCOUNT_FIELD, spelled out for this hot path.
local function account_current(ctx, withPlan)
  local v
  if withPlan then
    v = redis.call('HMGET', ctx.accountKey, 'b', 's', 'h', 'c', 'ce', 'a', 'jg', 'p', 'bk', 'mv', 'jc')
  else
    v = redis.call('HMGET', ctx.accountKey, 'b', 's', 'h', 'c', 'ce', 'a', 'jg')
  end
  if not v[1] then
    return nil
  end
  if ctx.now >= tonumber(v[5]) then
    local a = account_load(ctx)
    account_roll(ctx, a)
    return a
  end
  local a = { bal = tonumber(v[1]), spent = tonumber(v[2]), held = tonumber(v[3]),
    cyc = tonumber(v[4]), ce = tonumber(v[5]), alw = tonumber(v[6]), jg = tonumber(v[7]) }
  if withPlan then
    a.plan, a.bulk, a.maxv, a.cap = v[8], tonumber(v[9]), tonumber(v[10]), tonumber(v[11])
  end
  return a
end

-- Write balance / spent / held back after a credit movement.
local function account_save_credits(ctx, a)
  account_write(ctx, a, { 'bal', 'spent', 'held' })
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
  account_write(ctx, a, { 'anc', 'interval' })
  account_open_cycle(ctx, a, ctx.now, period_start(a.anc, a.unit, a.len, 1))
end
