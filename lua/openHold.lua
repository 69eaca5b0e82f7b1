--[[
  openHold: reserve credits for a hold in one atomic step (docs/holds.md, docs/idempotency.md):
  re-check the Idempotency-Key, check the plan's holds rules, the open-hold cap and the
  credits, reserve, record the hold and store the outcome under the key. An items hold
  reserves items x (required + optional); a budget hold reserves amount. The cost does not
  depend on the number of items. Lapsed holds, and ended holds past their bounds, are tidied
  first: HOLDS_DUE names them, before anything is written.
  Layout: holds       the movement layout, then KEYS[5] holdsActive, KEYS[6] holdsEnded (lib/prologue.lua)
  KEYS[7] holdList      zset   every hold id scored by creation time (ms)
  KEYS[8] operations    hash   the subject's recent operation ids, with dropped holds' (lib/operations.lua)
  KEYS[9] hold          hash   the new hold (lib/holds.lua)
  KEYS[10] idempotency  hash   the Idempotency-Key record (untouched without a key)
  ARGV[5] holdId        string   id of the new hold; an existing hold with the same terms is a replay
  ARGV[6] kind          'items'|'budget'
  ARGV[7] surface       string   the surface the hold is opened on
  ARGV[8] items         integer  items (an items hold), 0 for a budget
  ARGV[9] required      integer  credits per item always spent by a delivered item
  ARGV[10] optional     integer  credits per item spent as far as the item used them
  ARGV[11] amount       integer  a budget's credits, 0 for an items hold
  ARGV[12] leaseMs      integer  lease length; renewed by every settlement
  ARGV[13] idempotencyKey string '' when the request carries no Idempotency-Key
  ARGV[14] fingerprint  string   hash of the canonical request body
  ARGV[15] idempotencyToken string token from beginIdempotency, '' if it was not called
  ARGV[16] idempotencyTtlMs integer how long a stored outcome is kept
  ARGV[17] endedHoldsKeepMs integer how long an ended hold is kept
  ARGV[18] endedHoldsMax integer ended holds kept per subject
  ARGV[19] holdLeaseMs  integer  this hold's own lease length, stored on it; 0: leaseMs
  KEYS[11] outbox       stream the subject's events (lib/events.lua; written only when one fires)
  ARGV[20] eventsMax    integer  events the outbox holds at most
  Returns OK: {code, hold hold, storedCode integer, events integer, eventsDropped integer}   hold: lib/holds.lua's reply form
  Returns REPLAYED: {code, outcome json, storedCode integer, events integer, eventsDropped integer}   the stored
    outcome (of the Idempotency-Key, or of the hold already opened under this hold id) and its code
  Returns HOLD_LIMIT: {code, refusal json {active integer, cap integer}, storedCode integer, events integer, eventsDropped integer}
  Returns INSUFFICIENT: {code, refusal json {balance integer, needed integer}, storedCode integer, events integer, eventsDropped integer}
  Returns SURFACE_NOT_ALLOWED: {code, refusal json {surfaces string}, storedCode integer, events integer, eventsDropped integer}
  Returns TOO_MANY_ITEMS: {code, refusal json {max integer}, storedCode integer, events integer, eventsDropped integer}
  Returns HOLDS_DUE: {code, ...due string}   the holds to tidy first (lua/tidyHolds.lua); nothing changed
  Returns: {code, payload string?, storedCode integer?, events integer?, eventsDropped integer?}
    events, eventsDropped: the events this call wrote to the outbox, and those it found no room for
    Codes: also NO_ACCOUNT, IDEMPOTENCY_REUSED, IDEMPOTENCY_IN_USE, HOLD_EXISTS, HOLD_DROPPED
    (the hold id was used by a hold no longer kept)
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/holds.lua"
--@include "lib/idempotency.lua"
--@include "lib/events.lua"

local ctx = prologue_move(KEYS, ARGV)
ctx.holdsActiveKey, ctx.holdsEndedKey = KEYS[5], KEYS[6]
local holdListKey, operationsKey, holdKey, idempotencyRecord = KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local holdId, kind, surface = ARGV[5], ARGV[6], ARGV[7]
local itemsArg, requiredArg, optionalArg = ARGV[8], ARGV[9], ARGV[10]
local amount, leaseMs = tonumber(ARGV[11]), tonumber(ARGV[12])
local idempotencyKey, fingerprint, idempotencyToken = ARGV[13], ARGV[14], ARGV[15]
local idempotencyTtlMs = tonumber(ARGV[16])
ctx.endedKeepMs, ctx.endedMax = tonumber(ARGV[17]), tonumber(ARGV[18])
local holdLeaseText = ARGV[19]
ctx.outboxKey, ctx.eventsMax = KEYS[11], tonumber(ARGV[20])
local holdLeaseMs = tonumber(holdLeaseText)
if holdLeaseMs > 0 then
  leaseMs = holdLeaseMs
end

local items, required, optional = tonumber(itemsArg), tonumber(requiredArg), tonumber(optionalArg)

local a = holds_credits(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '', 0 }
end
-- Every answer but HOLDS_DUE comes once all its checks have run; its writes start with the
-- rollover, whatever the outcome (any call brings the account to its current cycle).
-- Every such answer ends with the events the call wrote (lib/events.lua).
local function answer(reply)
  cycle_save(ctx, a)
  reply[3] = reply[3] or 0
  reply[4], reply[5] = events_reply(ctx)
  return reply
end

local keyed = idempotencyKey ~= ''
if keyed then
  local found = idempotency_check(idempotencyRecord, fingerprint, idempotencyToken, ctx.now)
  if found then
    return answer(found)
  end
end

-- An outcome that is not kept under the key frees it for a corrected retry (docs/idempotency.md).
local function refuse(code, payload)
  cycle_save(ctx, a)
  if keyed then
    idempotency_release(idempotencyRecord, idempotencyToken)
  end
  return answer({ code, payload, 0 })
end

local due = holds_due_reply(ctx, true)
if due then
  return due
end

-- The hold id is the opening's own operation id: the same request sent again (a retry, a
-- client resending after a reconnect) gets the hold back, whatever changed since (a plan
-- change, the cap); another request with it is refused, and so is any once its hold is gone.
local existing = hold_load(holdKey)
if existing then
  if existing.kind == kind and existing.surface == surface and existing.items == items
    and existing.required == required and existing.optional == optional
    and (kind == 'items' or existing.reserved == amount) then
    local payload = cjson.encode(hold_reply(existing))
    cycle_save(ctx, a)
    if keyed then
      idempotency_store(idempotencyRecord, fingerprint, CODE.OK, payload, idempotencyTtlMs)
    end
    return answer({ CODE.REPLAYED, payload, CODE.OK })
  end
  return refuse(CODE.HOLD_EXISTS, '')
end
if redis.call('ZSCORE', holdListKey, holdId) or redis.call('HEXISTS', operationsKey, 'h' .. holdId) == 1 then
  return refuse(CODE.HOLD_DROPPED, '')
end

local rules = redis.call('HMGET', ctx.accountKey, ACCOUNT.holdsCap, ACCOUNT.holdsMaxItems, ACCOUNT.holdsSurfaces)
local cap, maxItems, surfaces = tonumber(rules[1]), tonumber(rules[2]), rules[3]

if not string.find(',' .. surfaces .. ',', ',' .. surface .. ',', 1, true) then
  return refuse(CODE.SURFACE_NOT_ALLOWED, cjson.encode({ surfaces = surfaces }))
end
if kind == 'items' and items > maxItems then
  return refuse(CODE.TOO_MANY_ITEMS, cjson.encode({ max = maxItems }))
end
local active = redis.call('ZCARD', ctx.holdsActiveKey)
if active >= cap then
  local payload = cjson.encode({ active = active, cap = cap })
  cycle_save(ctx, a)
  if keyed then
    idempotency_store(idempotencyRecord, fingerprint, CODE.HOLD_LIMIT, payload, idempotencyTtlMs)
  end
  return answer({ CODE.HOLD_LIMIT, payload, 0 })
end

local reserve = amount
if kind == 'items' then
  reserve = items * (required + optional)
end
if a.balance < reserve then
  return refuse(CODE.INSUFFICIENT, cjson.encode({ balance = a.balance, needed = reserve }))
end

-- Every check passed: the writes.
cycle_save(ctx, a)
a.balance = a.balance - reserve
a.held = a.held + reserve
holds_save_credits(ctx, a)
-- Each number written more than once is turned into text once (Lua's own conversion is slow).
local reserveText, cycleText = string.format('%d', reserve), string.format('%d', a.cycle)
local nowText, leaseText = string.format('%d', ctx.now), string.format('%d', ctx.now + leaseMs)
journal_append(ctx, 'reserve', reserveText, cycleText, holdId, cycleText, a.journalGrant and string.format('%d', a.journalGrant))

local h = { id = holdId, kind = kind, status = 'open', surface = surface, items = items,
  required = required, optional = optional, reserved = reserve, settled = 0, delivered = 0,
  optionalSpent = 0, spent = 0, refunded = 0, refundedToEndedCycle = 0, cycleId = a.cycle,
  createdAt = ctx.now, endedAt = 0, leaseExpiresAt = ctx.now + leaseMs, endReason = '', labels = 0,
  failed = {} }
-- Straight-line: the texts the caller sent go back as they came; what is 0 is not stored.
redis.call('HSET', holdKey, HOLD.kind, kind, HOLD.status, 'open', HOLD.surface, surface, HOLD.items, itemsArg,
  HOLD.required, requiredArg, HOLD.optional, optionalArg, HOLD.reserved, reserveText, HOLD.cycleId, cycleText,
  HOLD.createdAt, nowText, HOLD.leaseExpiresAt, leaseText)
if holdLeaseMs > 0 then
  redis.call('HSET', holdKey, HOLD.leaseMs, holdLeaseText)
end
redis.call('ZADD', ctx.holdsActiveKey, leaseText, holdId)
redis.call('ZADD', holdListKey, nowText, holdId)

local reply = hold_reply(h)
if keyed then
  idempotency_store(idempotencyRecord, fingerprint, CODE.OK, cjson.encode(reply), idempotencyTtlMs)
end
return { CODE.OK, reply, 0, events_reply(ctx) }
