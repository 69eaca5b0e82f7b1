--[[
  account: the stored fields of an account hash, and the one decoder of them. Scripts name an
  attribute as ACCOUNT.<attribute>; the build turns that into the stored one- or two-letter
  field (src/scripts/compile.ts), which keeps an idle account small and the hot scripts free
  of tables. Attributes:
    plan                   plan name
    allowance              credits of the current cycle
    nextAllowance          credits from the next cycle on (a plan change applies there; docs/accounts.md#billing-cycles)
    balance spent held     credits of the current cycle: balance + spent + held == allowance
    cycle                  current cycle number (1, 2, ...)
    cycleStart cycleEnd    its bounds, [start, end) in ms
    anchor interval        cycle anchor (ms) and '<unit><length>': 'd30' days, 'm1' months
    holdsCap               open holds allowed at once (the plan's holds.cap)
    holdsMaxItems          items per hold (holds.maxItems)
    holdsSurfaces          surfaces holds may be opened on, comma-separated (holds.surfaces)
    journalGrant           last cycle whose opening grant is in the journal (lib/journal.lua)
    plansVersion           the plan table its numbers came from: 'v<n>' (createTollgate's
                           plansVersion) or 'd<digest>' of the table (docs/limits.md#plan-edits)
    events                 thresholds and their state, only on an account with events (lib/events.lua)
    grantOrder             present only while the account has live or pending grants
                           (lib/grants.lua, docs/grants.md): the spend order of its active sources
    extras                 what the account has beyond its plan (account_extras): '' nothing,
                           '<grantSum> <grantNext> <front>' while it has grants (the sum of
                           their remaining credits, their next roll in ms or -1, the first
                           source of grantOrder), ' e' appended (or 'e' alone) while it has
                           events. Written early in a new account's hash, it tells the hot
                           scripts in one cheap lookup that there is no grantOrder or events
                           field to look for (a missing field is a walk of the whole hash), and
                           a charge that its front source pays needs no grantOrder either;
                           account_load gives it as a.grantSum and a.grantNext
    grantSeq               the number of the last grant issued (never reused)
  and per surface of the plan: ACCOUNT_PREFIX.windows .. surface, its windows' spec, and
  ACCOUNT_PREFIX.counters .. surface, their counts (the state of lib/windows.lua), so the
  request windows live in the account's own hash and an admit touches no other key; per live
  or pending grant n: ACCOUNT_PREFIX.grantTerms .. n and ACCOUNT_PREFIX.grantCredits .. n
  (lib/grants.lua), which account_load gives as a.grantTerms[n], a.grantCredits[n].
]]

--@const
local ACCOUNT = {
  plan = 'p', allowance = 'a', nextAllowance = 'na', balance = 'b', spent = 's', held = 'h',
  cycle = 'c', cycleStart = 'cs', cycleEnd = 'ce', anchor = 'an', interval = 'iv',
  holdsCap = 'hc', holdsMaxItems = 'hm', holdsSurfaces = 'hs', journalGrant = 'jg',
  plansVersion = 'pv', events = 'ev', grantOrder = 'go', extras = 'x', grantSeq = 'gs',
}

-- Attributes stored as text; every other one is a number.
--@const
local ACCOUNT_TEXT = { plan = 1, interval = 1, holdsSurfaces = 1, plansVersion = 1, events = 1, grantOrder = 1, extras = 1 }

-- The extras text of an account with these grants (order: its spend order, or just the order's
-- front; nil: no grants) and events (nil: none).
local function account_extras(order, grantSum, grantNext, events)
  local text = order and string.format('%d %d %s', grantSum, grantNext, string.match(order, '^%S+')) or ''
  if events then
    return text == '' and 'e' or text .. ' e'
  end
  return text
end

-- The grants' sum and next roll in an extras text (nil without grants): all a credit pre-check
-- reads of it, taken without the rest.
local function account_extras_grants(text)
  if not text or text == '' then
    return nil, nil
  end
  local sum, nextRoll = string.match(text, '^(%d+) (%-?%d+)')
  return tonumber(sum), tonumber(nextRoll)
end

-- An extras text read (nil: an account from before extras, which has neither): grantSum,
-- grantNext and the front of the spend order (all nil without grants), and whether the account
-- has events.
local function account_extras_read(text)
  if not text or text == '' then
    return nil, nil, nil, false
  end
  local sum, nextRoll, front = string.match(text, '^(%d+) (%-?%d+) (%w+)')
  return tonumber(sum), tonumber(nextRoll), front, string.byte(text, -1) == 101
end

-- Whether an account whose numbers came from plan table `stored` (nil: from before versions)
-- is behind the caller's table `given`: 'v<n>' versions by their number, so servers with an
-- older table never move it back; a table digest ('d...') whenever they differ.
local function account_behind(stored, given)
  if stored == given or given == '' then
    return false
  end
  if string.byte(given, 1) == 118 then
    local number = stored and string.match(stored, '^v(%d+)$')
    return not number or tonumber(number) < tonumber(string.sub(given, 2))
  end
  return true
end

--@const
local ACCOUNT_PREFIX = { windows = 'w:', counters = 'r:', grantTerms = 'g:', grantCredits = 'q:' }

-- The whole account as attributes, with a.windows[surface] and a.counters[surface] (and
-- a.grantTerms[n], a.grantCredits[n] when it has grants); nil when there is none.
local function account_load(accountKey)
  local flat = redis.call('HGETALL', accountKey)
  if #flat == 0 then
    return nil
  end
  local attribute, text, windowsPrefix, countersPrefix = {}, ACCOUNT_TEXT, ACCOUNT_PREFIX.windows, ACCOUNT_PREFIX.counters
  for name, field in pairs(ACCOUNT) do
    attribute[field] = name
  end
  local a = { windows = {}, counters = {} }
  for i = 1, #flat, 2 do
    local field, value = flat[i], flat[i + 1]
    local name = attribute[field]
    if name and text[name] then
      a[name] = value
    elseif name then
      a[name] = tonumber(value)
    elseif string.sub(field, 1, #windowsPrefix) == windowsPrefix then
      a.windows[string.sub(field, #windowsPrefix + 1)] = value
    elseif string.sub(field, 1, #countersPrefix) == countersPrefix then
      a.counters[string.sub(field, #countersPrefix + 1)] = value
    elseif string.sub(field, 1, 2) == ACCOUNT_PREFIX.grantTerms then
      a.grantTerms = a.grantTerms or {}
      a.grantTerms[tonumber(string.sub(field, 3))] = value
    elseif string.sub(field, 1, 2) == ACCOUNT_PREFIX.grantCredits then
      a.grantCredits = a.grantCredits or {}
      a.grantCredits[tonumber(string.sub(field, 3))] = value
    end
  end
  a.grantSum, a.grantNext = account_extras_read(a.extras)
  return a
end

-- Store the named attributes of a.
local function account_write(accountKey, a, names)
  local fields, args = ACCOUNT, {}
  for _, name in ipairs(names) do
    args[#args + 1] = fields[name]
    args[#args + 1] = a[name]
  end
  redis.call('HSET', accountKey, unpack(args))
end

-- Store a plan's surfaces' windows on the account (surfaces the plan no longer has are
-- removed, with their counts). windows: 'surface=spec;surface=spec' as src/rules/plans.ts encodes it.
local function account_write_windows(accountKey, a, windows)
  local prefix, keep, args = ACCOUNT_PREFIX.windows, {}, {}
  for surface, spec in string.gmatch(windows, '([^=;]+)=([^;]+)') do
    keep[surface] = true
    args[#args + 1] = prefix .. surface
    args[#args + 1] = spec
  end
  redis.call('HSET', accountKey, unpack(args))
  for surface in pairs(a.windows or {}) do
    if not keep[surface] then
      redis.call('HDEL', accountKey, prefix .. surface, ACCOUNT_PREFIX.counters .. surface)
    end
  end
end

-- Store a plan's numbers on the account: its windows and holds rules now, its allowance from
-- the next cycle (docs/accounts.md#billing-cycles).
local function account_write_plan(accountKey, a, plan, allowance, holdsCap, holdsMaxItems, holdsSurfaces, windows, plansVersion)
  account_write_windows(accountKey, a, windows)
  a.plan, a.nextAllowance = plan, allowance
  a.holdsCap, a.holdsMaxItems, a.holdsSurfaces = holdsCap, holdsMaxItems, holdsSurfaces
  a.plansVersion = plansVersion
  account_write(accountKey, a, { 'plansVersion', 'plan', 'nextAllowance', 'holdsCap', 'holdsMaxItems', 'holdsSurfaces' })
end
