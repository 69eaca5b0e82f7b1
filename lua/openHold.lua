--[[
  openHold: reserve credits for a hold in one atomic step (docs/holds.md, docs/idempotency.md): re-check the
  Idempotency-Key, end lapsed holds, check the plan's holds rules, the open-hold cap and the
  credits, reserve, record the hold and store the outcome under the key. An items hold
  reserves items x (required + optional); a budget hold reserves amount. The cost does not
  depend on the number of items.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   ended cycles
  KEYS[3] journal       stream credit movements (lib/journal.lua)
  KEYS[4] history       hash   credits per day (lib/history.lua)
  KEYS[5] holdsActive   zset   open hold ids scored by lease expiry (ms)
  KEYS[6] holdList      zset   every hold id scored by creation time (ms)
  KEYS[7] hold          hash   the new hold (lib/holds.lua)
  KEYS[8] idempotency   hash   the Idempotency-Key record (untouched without a key)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] holdId        string   id of the new hold; an existing hold with the same terms is a replay
  ARGV[3] kind          'items'|'budget'
  ARGV[4] surface       string   the surface the hold is opened on
  ARGV[5] items         integer  items (an items hold), 0 for a budget
  ARGV[6] required      integer  credits per item always spent by a delivered item
  ARGV[7] optional      integer  credits per item spent as far as the item used them
  ARGV[8] amount        integer  a budget's credits, 0 for an items hold
  ARGV[9] leaseMs       integer  lease length; renewed by every settlement
  ARGV[10] idemKey      string   '' when the request carries no Idempotency-Key
  ARGV[11] fingerprint  string   hash of the canonical request body
  ARGV[12] idemToken    string   token from beginIdempotency, '' if it was not called
  ARGV[13] idemTtlMs    integer  how long a stored outcome is kept
  ARGV[14] holdPrefix   string   hold hashes are <prefix><holdId> (same slot)
  ARGV[15] journalTrim  string   'off' | 'maxlen' | 'minage'
  ARGV[16] journalBound integer  max entries, or max age in ms
  ARGV[17] historyDays  integer  days of history kept; 0 keeps none
  Returns: {code, payload, storedCode}
    OK: payload = the hold (lib/holds.lua's HOLD_REPLY form). REPLAYED: payload and storedCode = the stored outcome (of
    the Idempotency-Key, or the hold already opened under this hold id), as JSON.
    HOLD_LIMIT (stored under the key): {"active":n,"cap":n}. INSUFFICIENT: {"balance":n,"needed":n}.
    SURFACE_NOT_ALLOWED: {"surfaces":"api,web"}. TOO_MANY_ITEMS: {"max":n}.
    Codes: also NO_ACCOUNT, IDEMPOTENCY_REUSED, IDEMPOTENCY_IN_USE, HOLD_EXISTS
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/holds.lua"
--@include "lib/idempotency.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local historyKey   = KEYS[4]
local holdsActiveKey = KEYS[5]
local holdListKey  = KEYS[6]
local holdKey      = KEYS[7]
local idemRecord   = KEYS[8]
local nowArg       = ARGV[1]
local holdId       = ARGV[2]
local kind         = ARGV[3]
local surface      = ARGV[4]
local itemsArg     = ARGV[5]
local requiredArg  = ARGV[6]
local optionalArg  = ARGV[7]
local amount       = tonumber(ARGV[8])
local leaseMs      = tonumber(ARGV[9])
local idemKey      = ARGV[10]
local fingerprint  = ARGV[11]
local idemToken    = ARGV[12]
local idemTtlMs    = tonumber(ARGV[13])
local holdPrefix   = ARGV[14]
local journalTrim  = ARGV[15]
local journalBound = ARGV[16]
local historyDays  = tonumber(ARGV[17])

local items, required, optional = tonumber(itemsArg), tonumber(requiredArg), tonumber(optionalArg)
local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  historyKey = historyKey, holdsActiveKey = holdsActiveKey, holdPrefix = holdPrefix, journalTrim = journalTrim,
  journalBound = journalBound, historyDays = historyDays, now = clock_now(nowArg) }

local a = holds_credits(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '', 0 }
end
local keyed = idemKey ~= ''
if keyed then
  local found = idempotency_check(idemRecord, fingerprint, idemToken, ctx.now)
  if found then
    return found
  end
end

-- An outcome that is not kept under the key frees it for a corrected retry (docs/idempotency.md).
local function refuse(code, payload)
  if keyed then
    idempotency_release(idemRecord, idemToken)
  end
  return { code, payload, 0 }
end

if redis.call('ZRANGEBYSCORE', holdsActiveKey, '-inf', ctx.now, 'LIMIT', 0, 1)[1] then
  holds_expire_lapsed(ctx, a)
end

-- The hold id is the opening's own operation id: the same request sent again (a retry, a
-- client resending after a reconnect) gets the hold back, whatever changed since (a plan
-- change, the cap); another request with it is refused.
local existing = redis.call('EXISTS', holdKey) == 1 and hold_load(holdKey, holdPrefix)
if existing then
  if existing.kind == kind and existing.surface == surface and existing.items == items
    and existing.required == required and existing.optional == optional
    and (kind == 'items' or existing.reserved == amount) then
    local payload = cjson.encode(hold_reply(existing))
    if keyed then
      idempotency_store(idemRecord, fingerprint, CODE.OK, payload, idemTtlMs)
    end
    return { CODE.REPLAYED, payload, CODE.OK }
  end
  return refuse(CODE.HOLD_EXISTS, '')
end

local rules = redis.call('HMGET', accountKey, ACCOUNT.holdsCap, ACCOUNT.holdsMaxItems, ACCOUNT.holdsSurfaces)
local cap, maxItems, surfaces = tonumber(rules[1]), tonumber(rules[2]), rules[3]

if not string.find(',' .. surfaces .. ',', ',' .. surface .. ',', 1, true) then
  return refuse(CODE.SURFACE_NOT_ALLOWED, cjson.encode({ surfaces = surfaces }))
end
if kind == 'items' and items > maxItems then
  return refuse(CODE.TOO_MANY_ITEMS, cjson.encode({ max = maxItems }))
end
local active = redis.call('ZCARD', holdsActiveKey)
if active >= cap then
  local payload = cjson.encode({ active = active, cap = cap })
  if keyed then
    idempotency_store(idemRecord, fingerprint, CODE.HOLD_LIMIT, payload, idemTtlMs)
  end
  return { CODE.HOLD_LIMIT, payload, 0 }
end

local reserve = amount
if kind == 'items' then
  reserve = items * (required + optional)
end
if a.balance < reserve then
  return refuse(CODE.INSUFFICIENT, cjson.encode({ balance = a.balance, needed = reserve }))
end

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
redis.call('ZADD', holdsActiveKey, leaseText, holdId)
redis.call('ZADD', holdListKey, nowText, holdId)

local reply = hold_reply(h)
if keyed then
  idempotency_store(idemRecord, fingerprint, CODE.OK, cjson.encode(reply), idemTtlMs)
end
return { CODE.OK, reply, 0 }
