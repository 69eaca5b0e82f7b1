--[[
  settleHold: settle one item of a hold (docs/holds.md) and renew its lease.
  An items hold: without a failure label the item's required credits are spent and
  optionalSpent of its optional ones; with one, nothing is spent (what the item held goes back
  when the hold ends) and the label is counted. A budget hold: amount is spent from what is
  left; 0 spends nothing and only renews the lease; more than is left is refused and takes
  nothing. The hold ends when every item is settled or the budget is used up, refunding what
  it still holds to the cycle that paid. An item id settles once: a repeat is a replay.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   ended cycles
  KEYS[3] journal       stream credit movements (lib/journal.lua)
  KEYS[4] history       hash   credits per day (lib/history.lua)
  KEYS[5] holdsActive   zset   open hold ids scored by lease expiry (ms)
  KEYS[6] hold          hash   the hold (lib/holds.lua)
  KEYS[7] holdItems     set    item ids the hold has settled
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] kind          'items'|'budget'  the kind of hold this settlement is for
  ARGV[3] itemId        string   which item this is (a repeat is a replay)
  ARGV[4] failed        string   an items hold's failure label, '' when the item was delivered
  ARGV[5] optionalSpent integer  an items hold: optional credits the item used (0..optional)
  ARGV[6] amount        integer  a budget hold: credits to spend (0 renews the lease)
  ARGV[7] leaseMs       integer  lease length from now
  ARGV[8] holdPrefix    string   hold hashes are <prefix><holdId> (same slot)
  ARGV[9] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[10] journalBound integer  max entries, or max age in ms
  ARGV[11] historyDays  integer  days of history kept; 0 keeps none
  Returns: {code, hold}   hold in lib/holds.lua's HOLD_REPLY form ({} when there is none)
    REPLAYED: this item was settled before; nothing changed.
    Codes: OK, REPLAYED, NO_ACCOUNT, NO_HOLD, WRONG_HOLD_KIND, HOLD_ENDED, LEASE_EXPIRED,
    BUDGET_EXHAUSTED, TOO_MANY_LABELS (nothing changed), BAD_SETTLEMENT (optionalSpent above
    the item's optional credits)
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/holds.lua"

local accountKey    = KEYS[1]
local cyclesKey     = KEYS[2]
local journalKey    = KEYS[3]
local historyKey    = KEYS[4]
local holdsActiveKey = KEYS[5]
local holdKey       = KEYS[6]
local holdItemsKey  = KEYS[7]
local nowArg        = ARGV[1]
local kind          = ARGV[2]
local itemId        = ARGV[3]
local failed        = ARGV[4]
local optionalSpent = tonumber(ARGV[5])
local amount        = tonumber(ARGV[6])
local leaseMs       = tonumber(ARGV[7])
local holdPrefix    = ARGV[8]
local journalTrim   = ARGV[9]
local journalBound  = ARGV[10]
local historyDays   = tonumber(ARGV[11])

-- Distinct failure labels one hold may count.
local MAX_LABELS = 16

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  historyKey = historyKey, holdsActiveKey = holdsActiveKey, holdPrefix = holdPrefix, journalTrim = journalTrim,
  journalBound = journalBound, historyDays = historyDays, now = clock_now(nowArg) }

local a = holds_credits(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
if redis.call('SISMEMBER', holdItemsKey, itemId) == 1 then
  local seen = hold_load(holdKey, holdPrefix)
  return { CODE.REPLAYED, seen and hold_reply(seen) or {} }
end
local h, refused, seen = hold_accepting(ctx, a, holdKey, kind)
if not h then
  return { refused, seen and hold_reply(seen) or {} }
end

local reason = 'settled'
if kind == 'budget' then
  if amount > h.reserved - h.spent then
    return { CODE.BUDGET_EXHAUSTED, hold_reply(h) }
  end
  hold_spend(ctx, a, h, amount)
  if amount > 0 then
    h.delivered = h.delivered + 1
  end
  reason = 'exhausted'
elseif failed ~= '' then
  if not h.failed[failed] then
    if h.labels >= MAX_LABELS then
      return { CODE.TOO_MANY_LABELS, hold_reply(h) }
    end
    h.labels = h.labels + 1
    redis.call('HSET', holdKey, HOLD.labels, h.labels)
  end
  h.failed[failed] = redis.call('HINCRBY', holdKey, HOLD_PREFIX.failed .. failed, 1)
else
  if optionalSpent > h.optional then
    return { CODE.BAD_SETTLEMENT, hold_reply(h) }
  end
  hold_spend(ctx, a, h, h.required + optionalSpent)
  h.delivered = h.delivered + 1
  h.optionalSpent = h.optionalSpent + optionalSpent
end
h.settled = h.settled + 1

redis.call('SADD', holdItemsKey, itemId)
-- The lease as text once: the hold and the open-holds index both take it.
h.leaseExpiresAt = ctx.now + leaseMs
local leaseText = string.format('%d', h.leaseExpiresAt)
redis.call('ZADD', holdsActiveKey, leaseText, h.id)
redis.call('HSET', holdKey, HOLD.settled, h.settled, HOLD.delivered, h.delivered, HOLD.optionalSpent, h.optionalSpent,
  HOLD.spent, h.spent, HOLD.leaseExpiresAt, leaseText)
if (kind == 'items' and h.settled >= h.items) or (kind == 'budget' and h.spent >= h.reserved) then
  hold_end(ctx, a, h, 'completed', reason)
end
holds_save_credits(ctx, a)
return { CODE.OK, hold_reply(h) }
