--[[
  holds: credits reserved upfront and settled item by item (docs/holds.md), and the one
  decoder of the hold hash. Attributes (HOLD.<attribute> becomes the stored field):
    kind ('items' | 'budget')  status ('open' | 'completed' | 'canceled')  surface (the id is
    the key's name after the last ':')
    items                 items reserved for (items holds; 0 for a budget)
    required optional     per item: credits always spent by a delivered item, and credits
                          spent only as far as the item used them (optionalSpent)
    reserved              credits taken from the balance when the hold opened
    settled               items settled (delivered or failed; every spend of a budget)
    delivered             items settled without a failure (a budget: spends of 1 or more)
    optionalSpent         optional credits spent, summed over the items
    spent refunded        credits spent, and given back (refunded at the end)
    refundedToEndedCycle  part of refunded that went to an ended cycle and raised no balance
    cycleId               the cycle that paid     createdAt endedAt leaseExpiresAt (ms)
    endReason             '' | settled | exhausted | finished | canceled | lease_expired
    labels                distinct failure labels, counted in failedLabels as 'label=n label=n'
    leaseMs               the hold's own lease length (0, not stored: the deployment's leaseMs)
    sources               what each source gave at opening, in draw order (lib/grants.lua's
                          drawn list; '' when not stored: all from cycleId, the account had no
                          grant). Spends take from the front of it, refunds from the back
                          (docs/grants.md#holds)
  and one field HOLD_PREFIX.item .. itemId per item it settled, so an item settled twice (a
  retry, a client resending after a reconnect) counts once: the hold keeps its own items, and
  no script touches a key of a hold but the hold's.
  Credits still held: reserved - spent - refunded. They belong to the paying sources.
  Reply form hold: {id string, kind 'items'|'budget', status 'open'|'completed'|'canceled',
    surface string, items integer, required integer, optional integer, reserved integer,
    settled integer, delivered integer, optionalSpent integer, spent integer, refunded integer,
    refundedToEndedCycle integer, cycleId integer, createdAt integer, endedAt integer,
    leaseExpiresAt integer,
    endReason ''|'settled'|'exhausted'|'finished'|'canceled'|'lease_expired', labels integer,
    sources string, ...failed {label string, count integer}}
    (hold_reply; HOLD_REPLY gives the positions, and the build checks they agree)
  An ended hold is kept ctx.endedKeepMs (its hash expires then) and the subject keeps at most
  ctx.endedMax of them: holdsEnded scores them by when they ended, and holds_due names the
  ones past either bound, for lua/tidyHolds.lua to drop. Its id then stays in the subject's
  operations (lib/operations.lua), so an opening sent again never opens it anew.
  Lapsed holds (open, lease run out) are ended by id: a script that finds some before it has
  written anything answers HOLDS_DUE with their ids, and the library ends them with
  lua/tidyHolds.lua, which declares their keys, then calls the script again.
  ctx fields used: those of lib/prologue.lua's movement, and holdsActiveKey, holdsEndedKey,
  endedKeepMs, endedMax, and lib/events.lua's. The account's credits travel in a table a
  {balance, spent, held, cycle, journalGrant, events}; the caller saves them (holds_save_credits).
]]
--@include "codes.lua"
--@include "account.lua"
--@include "cycle.lua"
--@include "journal.lua"
--@include "history.lua"
--@include "events.lua"

--@const
local HOLD = {
  kind = 'k', status = 'st', surface = 'sf', items = 'n', required = 'rq',
  optional = 'op', reserved = 'rv', settled = 'ns', delivered = 'dl', optionalSpent = 'os',
  spent = 'sp', refunded = 'rf', refundedToEndedCycle = 're', cycleId = 'cy', createdAt = 'ca',
  endedAt = 'ea', leaseExpiresAt = 'ls', endReason = 'er', labels = 'nl', failedLabels = 'fl',
  leaseMs = 'lm', sources = 'so',
}

--@const
local HOLD_TEXT = { kind = 1, status = 1, surface = 1, endReason = 1, failedLabels = 1, sources = 1 }

--@const
local HOLD_PREFIX = { item = 'i:' }

-- The reply form of a hold: its attributes at these positions, then its failure labels as
-- label, count pairs. src/records.ts reads the same positions (the bundle exports this table).
--@const export
local HOLD_REPLY = {
  id = 1, kind = 2, status = 3, surface = 4, items = 5, required = 6, optional = 7, reserved = 8,
  settled = 9, delivered = 10, optionalSpent = 11, spent = 12, refunded = 13, refundedToEndedCycle = 14,
  cycleId = 15, createdAt = 16, endedAt = 17, leaseExpiresAt = 18, endReason = 19, labels = 20, sources = 21,
}

-- Holds one tidy ends or drops at most, and ended holds dropped beyond what the bound needs,
-- so that a subject at its bound is tidied once per few openings.
local HOLDS_TIDY_BATCH = 32
local HOLDS_TIDY_SLACK = 15

-- The hold stored at holdKey as attributes, with h.failed[label] = count and h.key; nil when
-- there is none. One read whatever the number of its items; an attribute that is not stored
-- is 0 (or '' for text): a new hold stores only what is not.
local function hold_load(holdKey)
  local names, fields = {}, {}
  for name, field in pairs(HOLD) do
    names[#names + 1], fields[#fields + 1] = name, field
  end
  local v = redis.call('HMGET', holdKey, HOLD.status, unpack(fields))
  if not v[1] then
    return nil
  end
  local h = { id = string.match(holdKey, '([^:]*)$'), key = holdKey }
  for i, name in ipairs(names) do
    if HOLD_TEXT[name] then
      h[name] = v[i + 1] or ''
    else
      h[name] = tonumber(v[i + 1]) or 0
    end
  end
  h.failed = {}
  for label, n in string.gmatch(h.failedLabels, '([^= ]+)=(%d+)') do
    h.failed[label] = tonumber(n)
  end
  return h
end

-- Store the named attributes of h.
local function hold_write(holdKey, h, names)
  local fields, args = HOLD, {}
  for _, name in ipairs(names) do
    args[#args + 1] = fields[name]
    args[#args + 1] = h[name]
  end
  redis.call('HSET', holdKey, unpack(args))
end

-- The hold's drawn list: stored, or all of it from the cycle that paid (opened without grants).
local function hold_sources(h)
  if h.sources ~= '' or h.reserved == 0 then
    return h.sources
  end
  return string.format('c%d=%d', h.cycleId, h.reserved)
end

-- The reply form of a hold (HOLD_REPLY): numbers travel as integers, no text encoding.
local function hold_reply(h)
  local r = {}
  r[HOLD_REPLY.id], r[HOLD_REPLY.kind], r[HOLD_REPLY.status], r[HOLD_REPLY.surface] = h.id, h.kind, h.status, h.surface
  r[HOLD_REPLY.items], r[HOLD_REPLY.required], r[HOLD_REPLY.optional] = h.items, h.required, h.optional
  r[HOLD_REPLY.reserved], r[HOLD_REPLY.settled], r[HOLD_REPLY.delivered] = h.reserved, h.settled, h.delivered
  r[HOLD_REPLY.optionalSpent], r[HOLD_REPLY.spent], r[HOLD_REPLY.refunded] = h.optionalSpent, h.spent, h.refunded
  r[HOLD_REPLY.refundedToEndedCycle], r[HOLD_REPLY.cycleId] = h.refundedToEndedCycle, h.cycleId
  r[HOLD_REPLY.createdAt], r[HOLD_REPLY.endedAt], r[HOLD_REPLY.leaseExpiresAt] = h.createdAt, h.endedAt, h.leaseExpiresAt
  r[HOLD_REPLY.endReason], r[HOLD_REPLY.labels] = h.endReason, h.labels
  r[HOLD_REPLY.sources] = hold_sources(h)
  for label, n in pairs(h.failed) do
    r[#r + 1] = label
    r[#r + 1] = n
  end
  return r
end

-- The account's credits, as hold movements need them; nil when there is no account.
-- Rolls the cycle (and the grants) over first (docs/accounts.md#billing-cycles,
-- docs/grants.md#rolls). a.grantOrder is there only while the account has grants.
local function holds_credits(ctx)
  local v = redis.call('HMGET', ctx.accountKey, ACCOUNT.balance, ACCOUNT.spent, ACCOUNT.held,
    ACCOUNT.cycle, ACCOUNT.cycleEnd, ACCOUNT.journalGrant, ACCOUNT.extras)
  if not v[1] then
    return nil
  end
  local grantSum, grantNext, _, hasEvents = account_extras_read(v[7])
  if ctx.now >= tonumber(v[5]) or (grantNext and grantNext >= 0 and ctx.now >= grantNext) then
    local a = cycle_current_account(ctx)
    a.grantSum = a.grantSum or 0
    return a
  end
  local a = { balance = tonumber(v[1]), spent = tonumber(v[2]), held = tonumber(v[3]),
    cycle = tonumber(v[4]), journalGrant = tonumber(v[6]), grantSum = grantSum or 0, grantNext = grantNext }
  if grantSum or hasEvents then
    local more = redis.call('HMGET', ctx.accountKey, ACCOUNT.grantOrder, ACCOUNT.events)
    a.grantOrder, a.events = more[1] or nil, more[2] or nil
  end
  return a
end

-- Stores the account's credits; on an account with events, checks its thresholds too
-- (lib/events.lua), in the same command.
local function holds_save_credits(ctx, a)
  if not (a.events or a.grantOrder) then
    redis.call('HSET', ctx.accountKey, ACCOUNT.balance, a.balance, ACCOUNT.spent, a.spent, ACCOUNT.held, a.held)
    return
  end
  local fields = { ACCOUNT.balance, a.balance, ACCOUNT.spent, a.spent, ACCOUNT.held, a.held }
  if a.events then
    a.events = events_moved(ctx, a.events, a.balance, a.cycle, a.grantSum)
    fields[7], fields[8] = ACCOUNT.events, a.events
  end
  if a.grantOrder then
    fields[#fields + 1], fields[#fields + 2] = ACCOUNT.extras, account_extras(a.grantOrder, a.grantSum, a.grantNext, a.events)
  end
  redis.call('HSET', ctx.accountKey, unpack(fields))
end

local function hold_journal(ctx, a, kind, n, h)
  a.journalGrant = journal_append(ctx, kind, n, h.cycleId, h.id, a.cycle, a.journalGrant)
end

-- A part of a hold's drawn list (grants_range) moved from held to spent, or back (refund).
local function hold_part(ctx, a, h, part, refund)
  local n = part.amount
  if part.kind == 'g' then
    local live = grant_move(ctx, a, part.id, n, 'held', refund and 'remaining' or 'spent')
    if refund and not live then
      h.refundedToEndedCycle = h.refundedToEndedCycle + n
    end
    journal_source(ctx, refund and (live and 'refund' or 'refund_ended') or 'spend', n, a.cycle, h.id, 'g' .. part.id)
  elseif part.id == a.cycle then
    a.held = a.held - n
    if refund then
      a.balance = a.balance + n
    else
      a.spent = a.spent + n
    end
    a.journalGrant = journal_append(ctx, refund and 'refund' or 'spend', n, part.id, h.id, a.cycle, a.journalGrant)
  else
    redis.call('HINCRBY', ctx.cyclesKey, part.id .. ':' .. ENDED_CYCLE.held, -n)
    redis.call('HINCRBY', ctx.cyclesKey, part.id .. ':' .. (refund and ENDED_CYCLE.refunded or ENDED_CYCLE.spent), n)
    if refund then
      h.refundedToEndedCycle = h.refundedToEndedCycle + n
    end
    a.journalGrant = journal_append(ctx, refund and 'refund_ended' or 'spend', n, part.id, h.id, a.cycle, a.journalGrant)
  end
end

-- Move n held credits to spent, on the sources that paid for the hold: front first.
local function hold_spend(ctx, a, h, n)
  if n <= 0 then
    return
  end
  if h.sources ~= '' then
    for _, part in ipairs(grants_range(h.sources, h.spent, n)) do
      hold_part(ctx, a, h, part, false)
    end
    h.spent = h.spent + n
    history_add(ctx, 's', n)
    return
  end
  if h.cycleId == a.cycle then
    a.held = a.held - n
    a.spent = a.spent + n
  else
    redis.call('HINCRBY', ctx.cyclesKey, h.cycleId .. ':' .. ENDED_CYCLE.held, -n)
    redis.call('HINCRBY', ctx.cyclesKey, h.cycleId .. ':' .. ENDED_CYCLE.spent, n)
  end
  h.spent = h.spent + n
  hold_journal(ctx, a, 'spend', n, h)
  history_add(ctx, 's', n)
end

-- Give back n held credits to the sources that paid, last drawn first. A source that has ended
-- (its cycle over, a grant expired or voided) records the refund, and so does the hold; the
-- current balance does not change (docs/holds.md, docs/grants.md#holds).
local function hold_refund(ctx, a, h, n)
  if n <= 0 then
    return
  end
  if h.sources ~= '' then
    for _, part in ipairs(grants_range(h.sources, h.reserved - h.refunded - n, n, true)) do
      hold_part(ctx, a, h, part, true)
    end
    h.refunded = h.refunded + n
    history_add(ctx, 'r', n)
    return
  end
  if h.cycleId == a.cycle then
    a.held = a.held - n
    a.balance = a.balance + n
    hold_journal(ctx, a, 'refund', n, h)
  else
    redis.call('HINCRBY', ctx.cyclesKey, h.cycleId .. ':' .. ENDED_CYCLE.held, -n)
    redis.call('HINCRBY', ctx.cyclesKey, h.cycleId .. ':' .. ENDED_CYCLE.refunded, n)
    h.refundedToEndedCycle = h.refundedToEndedCycle + n
    hold_journal(ctx, a, 'refund_ended', n, h)
  end
  h.refunded = h.refunded + n
  history_add(ctx, 'r', n)
end

-- End an open hold: refund what it still holds and free its place under the cap; it is kept
-- ctx.endedKeepMs from now. The caller saves the account's credits afterwards.
local function hold_end(ctx, a, h, status, reason)
  if a.events and reason == 'lease_expired' then
    events_hold_lapsed(ctx, a.events, h)
  end
  hold_refund(ctx, a, h, h.reserved - h.spent - h.refunded)
  h.status, h.endReason, h.endedAt = status, reason, ctx.now
  hold_write(h.key, h, { 'status', 'endReason', 'endedAt', 'spent', 'refunded', 'refundedToEndedCycle' })
  redis.call('ZREM', ctx.holdsActiveKey, h.id)
  redis.call('ZADD', ctx.holdsEndedKey, ctx.now, h.id)
  redis.call('PEXPIRE', h.key, ctx.endedKeepMs)
end

-- Ids of holds a tidy should see (lua/tidyHolds.lua), at most HOLDS_TIDY_BATCH: open holds
-- whose lease ran out; when there are none and `ended` is asked, the oldest ended holds when
-- there are ctx.endedMax or more (enough to leave ctx.endedMax - 1 - HOLDS_TIDY_SLACK), else
-- those past ctx.endedKeepMs. Lapsed holds come alone, so the ended ones are counted after
-- they ended. Reads only.
local function holds_due(ctx, ended)
  local ids = redis.call('ZRANGEBYSCORE', ctx.holdsActiveKey, '-inf', ctx.now, 'LIMIT', 0, HOLDS_TIDY_BATCH)
  if not ended or #ids > 0 then
    return ids
  end
  local over = redis.call('ZCARD', ctx.holdsEndedKey) - ctx.endedMax + 1
  if over > 0 then
    return redis.call('ZRANGE', ctx.holdsEndedKey, 0, math.min(HOLDS_TIDY_BATCH, over + HOLDS_TIDY_SLACK) - 1)
  end
  return redis.call('ZRANGEBYSCORE', ctx.holdsEndedKey, '-inf', ctx.now - ctx.endedKeepMs, 'LIMIT', 0, HOLDS_TIDY_BATCH)
end

-- The HOLDS_DUE reply naming the holds due (holds_due), or nil when none is: a script answers
-- it before it has written anything, and the library tidies them and calls again.
local function holds_due_reply(ctx, ended)
  local due = holds_due(ctx, ended)
  if #due == 0 then
    return nil
  end
  table.insert(due, 1, CODE.HOLDS_DUE)
  return due
end

-- Earliest lease among the open holds, or -1 when none is open.
local function holds_next_lease(ctx)
  local first = redis.call('ZRANGE', ctx.holdsActiveKey, 0, 0, 'WITHSCORES')
  if #first == 0 then
    return -1
  end
  return tonumber(first[2])
end

-- Renew h's lease from now: its own lease length, or leaseMs (the deployment's). Writes the
-- hold's lease and the open-holds index; returns the new lease as text.
local function hold_renew(ctx, h, leaseMs)
  if h.leaseMs > 0 then
    leaseMs = h.leaseMs
  end
  h.leaseExpiresAt = ctx.now + leaseMs
  local leaseText = string.format('%d', h.leaseExpiresAt)
  redis.call('ZADD', ctx.holdsActiveKey, leaseText, h.id)
  redis.call('HSET', h.key, HOLD.leaseExpiresAt, leaseText)
  return leaseText
end

-- An open hold of `kind` (nil: of either kind) that may take one more settlement, or nil and
-- the code that refuses it (with the hold when there is one). A hold whose lease ran out is ended here with its
-- refunds, after every other check: the lease is checked when the settlement arrives
-- (docs/holds.md).
local function hold_accepting(ctx, a, holdKey, kind)
  local h = hold_load(holdKey)
  if not h then
    return nil, CODE.NO_HOLD
  end
  if kind and h.kind ~= kind then
    return nil, CODE.WRONG_HOLD_KIND, h
  end
  if h.status ~= 'open' then
    return nil, CODE.HOLD_ENDED, h
  end
  if ctx.now >= h.leaseExpiresAt then
    cycle_save(ctx, a)
    hold_end(ctx, a, h, 'completed', 'lease_expired')
    holds_save_credits(ctx, a)
    return nil, CODE.LEASE_EXPIRED, h
  end
  return h
end
