--[[
  holds: credits reserved upfront and settled item by item (docs/holds.md), and the one
  decoder of the hold hash. Attributes (HOLD.<attribute> becomes the stored field):
    kind ('items' | 'budget')  status ('open' | 'completed' | 'canceled')  surface (the id is
    the key's name after the hold prefix)
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
    labels                distinct failure labels; each counts in HOLD_PREFIX.failed .. label
  Credits still held: reserved - spent - refunded. They belong to the paying cycle.
  Each hold also has a set <hold key>:i of the item ids it settled, so an item settled twice
  (a retry, a client resending after a reconnect) counts once; it is kept HOLD_ITEMS_KEPT_MS
  after the hold ends.
  ctx fields used: accountKey, cyclesKey, journalKey, historyKey, holdsActiveKey, holdPrefix,
  journalTrim, journalBound, historyDays, now. The account's credits travel in a table a
  {balance, spent, held, cycle, journalGrant}; the caller saves them (holds_save_credits).
]]
--@include "codes.lua"
--@include "account.lua"
--@include "cycle.lua"
--@include "journal.lua"
--@include "history.lua"

--@const
local HOLD = {
  kind = 'k', status = 'st', surface = 'sf', items = 'n', required = 'rq',
  optional = 'op', reserved = 'rv', settled = 'ns', delivered = 'dl', optionalSpent = 'os',
  spent = 'sp', refunded = 'rf', refundedToEndedCycle = 're', cycleId = 'cy', createdAt = 'ca',
  endedAt = 'ea', leaseExpiresAt = 'ls', endReason = 'er', labels = 'nl',
}

--@const
local HOLD_TEXT = { kind = 1, status = 1, surface = 1, endReason = 1 }

--@const
local HOLD_PREFIX = { failed = 'f:' }

-- The reply form of a hold: its attributes at these positions, then its failure labels as
-- label, count pairs. src/records.ts reads the same positions (the bundle exports this table).
--@const export
local HOLD_REPLY = {
  id = 1, kind = 2, status = 3, surface = 4, items = 5, required = 6, optional = 7, reserved = 8,
  settled = 9, delivered = 10, optionalSpent = 11, spent = 12, refunded = 13, refundedToEndedCycle = 14,
  cycleId = 15, createdAt = 16, endedAt = 17, leaseExpiresAt = 18, endReason = 19, labels = 20,
}

local HOLD_ITEMS_KEPT_MS = 3600000

-- The hold as attributes, with h.failed[label] = count; nil when there is none. Its id is its
-- key's name after holdPrefix; an attribute that is not stored is 0 (or '' for text): a new
-- hold stores only what is not.
local function hold_load(holdKey, holdPrefix)
  local flat = redis.call('HGETALL', holdKey)
  if #flat == 0 then
    return nil
  end
  local attribute, text, failedPrefix = {}, HOLD_TEXT, HOLD_PREFIX.failed
  local h = { id = string.sub(holdKey, #holdPrefix + 1), failed = {}, endReason = '' }
  for name, field in pairs(HOLD) do
    attribute[field] = name
    if not text[name] then
      h[name] = 0
    end
  end
  for i = 1, #flat, 2 do
    local field, value = flat[i], flat[i + 1]
    local name = attribute[field]
    if name and text[name] then
      h[name] = value
    elseif name then
      h[name] = tonumber(value)
    elseif string.sub(field, 1, #failedPrefix) == failedPrefix then
      h.failed[string.sub(field, #failedPrefix + 1)] = tonumber(value)
    end
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
  for label, n in pairs(h.failed) do
    r[#r + 1] = label
    r[#r + 1] = n
  end
  return r
end

-- The account's credits, as hold movements need them; nil when there is no account.
-- Rolls the cycle over first (docs/accounts.md#billing-cycles).
local function holds_credits(ctx)
  local v = redis.call('HMGET', ctx.accountKey, ACCOUNT.balance, ACCOUNT.spent, ACCOUNT.held,
    ACCOUNT.cycle, ACCOUNT.cycleEnd, ACCOUNT.journalGrant)
  if not v[1] then
    return nil
  end
  if ctx.now >= tonumber(v[5]) then
    return cycle_current_account(ctx)
  end
  return { balance = tonumber(v[1]), spent = tonumber(v[2]), held = tonumber(v[3]),
    cycle = tonumber(v[4]), journalGrant = tonumber(v[6]) }
end

local function holds_save_credits(ctx, a)
  redis.call('HSET', ctx.accountKey, ACCOUNT.balance, a.balance, ACCOUNT.spent, a.spent, ACCOUNT.held, a.held)
end

local function hold_journal(ctx, a, kind, n, h)
  a.journalGrant = journal_append(ctx, kind, n, h.cycleId, h.id, a.cycle, a.journalGrant)
end

-- Move n held credits to spent, on the cycle that paid for the hold.
local function hold_spend(ctx, a, h, n)
  if n <= 0 then
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

-- Give back n held credits to the cycle that paid. If that cycle has ended the refund is
-- recorded there and on the hold, and the current balance does not change (docs/holds.md).
local function hold_refund(ctx, a, h, n)
  if n <= 0 then
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

-- End an open hold: refund what it still holds and free its place under the cap. The
-- caller saves the account's credits afterwards.
local function hold_end(ctx, a, h, status, reason)
  hold_refund(ctx, a, h, h.reserved - h.spent - h.refunded)
  h.status, h.endReason, h.endedAt = status, reason, ctx.now
  local holdKey = ctx.holdPrefix .. h.id
  hold_write(holdKey, h, { 'status', 'endReason', 'endedAt', 'spent', 'refunded', 'refundedToEndedCycle' })
  redis.call('ZREM', ctx.holdsActiveKey, h.id)
  redis.call('PEXPIRE', holdKey .. ':i', HOLD_ITEMS_KEPT_MS)
end

-- End every open hold whose lease ran out (its worker stopped reporting), with its refunds.
-- Returns how many ended; saves the credits when any did.
--@rare
local function holds_expire_lapsed(ctx, a)
  local ids = redis.call('ZRANGEBYSCORE', ctx.holdsActiveKey, '-inf', ctx.now)
  for _, id in ipairs(ids) do
    local h = hold_load(ctx.holdPrefix .. id, ctx.holdPrefix)
    if h and h.status == 'open' then
      hold_end(ctx, a, h, 'completed', 'lease_expired')
    else
      redis.call('ZREM', ctx.holdsActiveKey, id)
    end
  end
  if #ids > 0 then
    holds_save_credits(ctx, a)
  end
  return #ids
end

-- Earliest lease among the open holds, or -1 when none is open.
local function holds_next_lease(ctx)
  local first = redis.call('ZRANGE', ctx.holdsActiveKey, 0, 0, 'WITHSCORES')
  if #first == 0 then
    return -1
  end
  return tonumber(first[2])
end

-- An open hold of `kind` that may take one more settlement, or nil and the code that refuses
-- it (with the hold when there is one). A hold whose lease ran out is ended here with its
-- refunds: the check is made when the settlement arrives (docs/holds.md).
local function hold_accepting(ctx, a, holdKey, kind)
  local h = hold_load(holdKey, ctx.holdPrefix)
  if not h then
    return nil, CODE.NO_HOLD
  end
  if h.kind ~= kind then
    return nil, CODE.WRONG_HOLD_KIND, h
  end
  if h.status ~= 'open' then
    return nil, CODE.HOLD_ENDED, h
  end
  if ctx.now >= h.leaseExpiresAt then
    hold_end(ctx, a, h, 'completed', 'lease_expired')
    holds_save_credits(ctx, a)
    return nil, CODE.LEASE_EXPIRED, h
  end
  return h
end
