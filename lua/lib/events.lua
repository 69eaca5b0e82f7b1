--[[
  events: balance thresholds and the subject's outbox (docs/events.md). An event is appended
  to the outbox stream in the same script that moves the credit, so it is written exactly
  once: a replayed operation moves nothing and writes none.
  An account has events only when its plan names `events` or accounts.setThresholds gave it
  thresholds: then its hash holds ACCOUNT.events, one field,
    '<source><fired> <count> <dropped> <spec>'
      source   'p': the plan's thresholds; 'o': the account's own (setThresholds)
      fired    bitmask of the conditions that hold: 1 = depleted (available is 0), 2^i = the
               i-th threshold of spec (1-based)
      count    entries in the outbox not yet trimmed (at most ctx.eventsMax)
      dropped  events not written because the outbox was full (docs/events.md#size-bound)
      spec     thresholds, comma-separated: 'b<n>' below n (available <= n), 'u<p>/<limit>'
               usedPercent p, which holds while the cycle balance is <= limit (allowance -
               ceil(p% of it); -1 never: an allowance of 0)
  An account without it reads nothing more (its ACCOUNT.extras says so, lib/account.lua) and
  writes nothing more. A condition that starts to hold fires its event (credits.threshold,
  credits.depleted); one that stops re-arms it (credits.restored); both are checked after each
  movement, against the fired bits, so a crossing fires once and a replay fires nothing.
  Outbox entries: t type, a at (ms), d data (JSON), and on a replayed dead letter g (the group
  it is for) and i (its id: the entry id it was first written with).
  ctx fields used: accountKey, outboxKey, eventsMax, now; ctx.ev is the parsed field, once
  opened in a script.
]]
--@include "account.lua"

--@const
local EVENT_FIELD = { type = 't', at = 'a', data = 'd', group = 'g', id = 'i' }

-- Available credits, which `below` thresholds and depletion compare with: the cycle balance
-- and the active grants' remaining, their stored sum (docs/events.md#thresholds).
local function events_available(balance, grantSum)
  return balance + (grantSum or 0)
end

-- The threshold's public form as JSON.
local function events_threshold_json(item)
  if item.kind == 'b' then
    return '{"below":' .. item.n .. '}'
  end
  return '{"usedPercent":' .. item.n .. '}'
end

-- ACCOUNT.events parsed into ctx.ev (once per script); nil without one.
local function events_open(ctx, text)
  if ctx.ev then
    return ctx.ev
  end
  if not text then
    return nil
  end
  local source, fired, count, dropped, spec = string.match(text, '^(%a)(%d+) (%d+) (%d+) ?(.*)$')
  local items = {}
  for kind, n, limit in string.gmatch(spec, '(%a)(%d+)/?(%-?%d*)') do
    items[#items + 1] = { kind = kind, n = tonumber(n), limit = tonumber(limit) }
  end
  ctx.ev = { source = source, fired = tonumber(fired), count = tonumber(count), dropped = tonumber(dropped),
    items = items, written = 0, droppedNow = 0 }
  return ctx.ev
end

local function events_text(e)
  local spec = {}
  for i, item in ipairs(e.items) do
    if item.kind == 'b' then
      spec[i] = 'b' .. item.n
    else
      spec[i] = 'u' .. item.n .. '/' .. item.limit
    end
  end
  return e.source .. e.fired .. ' ' .. e.count .. ' ' .. e.dropped .. ' ' .. table.concat(spec, ',')
end

-- The usedPercent limits for a cycle of `allowance` credits.
local function events_limits(e, allowance)
  for _, item in ipairs(e.items) do
    if item.kind == 'u' then
      if allowance > 0 then
        item.limit = allowance - math.floor((item.n * allowance + 99) / 100)
      else
        item.limit = -1
      end
    end
  end
end

-- Append one event to the outbox, or count it dropped when the outbox holds eventsMax.
local function events_emit(ctx, e, kind, data)
  if e.count >= ctx.eventsMax then
    e.dropped = e.dropped + 1
    e.droppedNow = e.droppedNow + 1
    return
  end
  redis.call('XADD', ctx.outboxKey, '*', EVENT_FIELD.type, kind, EVENT_FIELD.at, string.format('%d', ctx.now),
    EVENT_FIELD.data, data)
  e.count = e.count + 1
  e.written = e.written + 1
end

-- Fire or re-arm every condition against the account's credits now: balance is the cycle
-- balance, grantSum the active grants' (lib/grants.lua). silent: only note which conditions
-- hold (thresholds just set: nothing crossed).
local function events_check(ctx, e, balance, cycle, grantSum, silent)
  local available = events_available(balance, grantSum)
  local was, fired, bit = e.fired, 0, 2
  local tail = ',"available":' .. available .. ',"cycle":' .. cycle .. '}'
  for _, item in ipairs(e.items) do
    local holds
    if item.kind == 'b' then
      holds = available <= item.n
    else
      holds = balance <= item.limit
    end
    local had = silent or math.floor(was / bit) % 2 == 1
    if holds then
      fired = fired + bit
      if not had then
        events_emit(ctx, e, 'credits.threshold', '{"threshold":' .. events_threshold_json(item) .. tail)
      end
    elseif had and not silent then
      events_emit(ctx, e, 'credits.restored', '{"threshold":' .. events_threshold_json(item) .. tail)
    end
    bit = bit * 2
  end
  if available <= 0 then
    fired = fired + 1
    if was % 2 == 0 and not silent then
      events_emit(ctx, e, 'credits.depleted', '{"available":' .. available .. ',"cycle":' .. cycle .. '}')
    end
  elseif was % 2 == 1 and not silent then
    events_emit(ctx, e, 'credits.restored', '{"threshold":null' .. tail)
  end
  e.fired = fired
end

-- After a movement: the account's new ACCOUNT.events text, its events fired (text: the
-- field as read; cycle: the current cycle, as number or text; grantSum: the active grants').
local function events_moved(ctx, text, balance, cycle, grantSum)
  local e = events_open(ctx, text)
  events_check(ctx, e, balance, cycle, grantSum)
  return events_text(e)
end

local function events_grant_id(g)
  return '{"grantId":"g' .. string.format('%d', g.n) .. '"'
end

-- What cycle_save is about to write for a: cycle.started for each cycle a rollover or a new
-- cycle opened (archive: the ended cycles' fields, nil when none), grant.expired and
-- grant.voided for the grants that ended, grant.added for one added, then the conditions
-- checked (docs/events.md#event-types) and the field written.
--@rare
local function events_rolled(ctx, a, archive)
  local e = events_open(ctx, a.events)
  local ended, fields = {}, {}
  for i = 1, #(archive or ended), 2 do
    local id, field = string.match(archive[i], '^(%d+):(%a+)$')
    if field == 'ce' then
      ended[#ended + 1] = tonumber(id)
    end
    fields[archive[i]] = archive[i + 1]
  end
  table.sort(ended)
  for _, id in ipairs(ended) do
    local opened = id + 1
    local start, finish, allowance = a.cycleStart, a.cycleEnd, a.allowance
    if opened ~= a.cycle then
      start, finish, allowance = fields[opened .. ':cs'], fields[opened .. ':ce'], fields[opened .. ':a']
    end
    events_emit(ctx, e, 'cycle.started', '{"cycle":' .. opened .. ',"start":' .. string.format('%d', start) .. ',"end":'
      .. string.format('%d', finish) .. ',"allowance":' .. string.format('%d', allowance) .. '}')
  end
  events_limits(e, a.allowance)
  for _, g in ipairs(a.grantEnded or {}) do
    if g.status == 'e' then
      events_emit(ctx, e, 'grant.expired', events_grant_id(g) .. ',"expired":' .. g.expired .. ',"expiresAt":'
        .. string.format('%d', g.expiresAt) .. '}')
    elseif g.status == 'v' then
      events_emit(ctx, e, 'grant.voided', events_grant_id(g) .. ',"voided":' .. g.voided .. '}')
    end
  end
  for _, g in pairs(a.grants or {}) do
    if g.new then
      events_emit(ctx, e, 'grant.added', events_grant_id(g) .. ',"kind":"' .. g.kind .. '","amount":' .. g.amount
        .. ',"effectiveAt":' .. string.format('%d', g.effectiveAt) .. ',"expiresAt":'
        .. (g.expiresAt > 0 and string.format('%d', g.expiresAt) or 'null') .. '}')
    end
  end
  events_check(ctx, e, a.balance, a.cycle, a.grantSum)
  a.events = events_text(e)
  redis.call('HSET', ctx.accountKey, ACCOUNT.events, a.events)
end

-- hold.lapsed, before the lapsed hold h refunds what it still holds: refunded is its total once it has.
--@rare
local function events_hold_lapsed(ctx, text, h)
  local e = events_open(ctx, text)
  events_emit(ctx, e, 'hold.lapsed', '{"holdId":' .. cjson.encode(h.id) .. ',"reserved":' .. h.reserved .. ',"spent":'
    .. h.spent .. ',"refunded":' .. (h.reserved - h.spent) .. '}')
end

-- Give the account of a (loaded whole) thresholds, or none: source 'p' (its plan's) or 'o'
-- (its own); spec 'b<n>,u<p>,...' (src/rules/events.ts), or 'none' for an account without
-- events. The conditions that hold now are noted, not fired: setting a threshold crosses
-- nothing (docs/events.md#thresholds). Writes the field; outboxKey: the subject's outbox, read
-- for its length when events start.
--@rare
local function events_configure(ctx, a, source, spec)
  if spec == 'none' then
    if a.events then
      redis.call('HDEL', ctx.accountKey, ACCOUNT.events)
      a.events = nil
      redis.call('HSET', ctx.accountKey, ACCOUNT.extras, account_extras(a.grantOrder, a.grantSum, a.grantNext, nil))
    end
    return
  end
  local e = events_open(ctx, a.events)
  if not e then
    e = { source = source, fired = 0, count = redis.call('XLEN', ctx.outboxKey), dropped = 0, items = {}, written = 0,
      droppedNow = 0 }
    ctx.ev = e
  end
  local items = {}
  for kind, n in string.gmatch(spec, '(%a)(%d+)') do
    items[#items + 1] = { kind = kind, n = tonumber(n) }
  end
  e.source, e.items = source, items
  events_limits(e, a.allowance)
  events_check(ctx, e, a.balance, a.cycle, a.grantSum, true)
  a.events = events_text(e)
  redis.call('HSET', ctx.accountKey, ACCOUNT.events, a.events, ACCOUNT.extras,
    account_extras(a.grantOrder, a.grantSum, a.grantNext, a.events))
end

-- When the sweep should next see the account of a (loaded whole, with events): its cycle's
-- end, its grants' next roll, or a grant's expiry notice not yet written, noticeMs before the
-- grant expires (docs/events.md#time-driven-events).
local function events_wake(a, noticeMs)
  local at = a.cycleEnd
  if a.grantNext and a.grantNext >= 0 and a.grantNext < at then
    at = a.grantNext
  end
  -- Each live grant's terms as loaded (a.grants, once worked out, has those still live).
  for n, terms in pairs(a.grantTerms or {}) do
    local k, x = string.match(terms, '^(%u)%d+ %d+ %d+ (%d+)')
    x = tonumber(x)
    if k and x > 0 and (not a.grants or a.grants[n]) and x - noticeMs < at then
      at = x - noticeMs
    end
  end
  return at
end

-- What a script's reply ends with: the events it wrote and those it dropped.
local function events_reply(ctx)
  local e = ctx.ev
  if not e then
    return 0, 0
  end
  return e.written, e.droppedNow
end

-- A reply whose last fields are `events integer?, eventsDropped integer?`: appended to it only
-- when the script wrote or dropped an event, so that a reply without any stays short.
local function events_trail(ctx, reply)
  local e = ctx.ev
  if e and e.written + e.droppedNow > 0 then
    reply[#reply + 1], reply[#reply + 2] = e.written, e.droppedNow
  end
  return reply
end
