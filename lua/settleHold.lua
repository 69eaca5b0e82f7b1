--[[
  settleHold: settle one item of a hold (docs/holds.md) and renew its lease.
  An items hold: without a failure label the item's required credits are spent and
  optionalSpent of its optional ones; with one, nothing is spent (what the item held goes back
  when the hold ends) and the label is counted. A budget hold: amount is spent from what is
  left; 0 spends nothing and only renews the lease; more than is left is refused and takes
  nothing. The hold ends when every item is settled or the budget is used up, refunding what
  it still holds to the cycle that paid. An item id settles once: a repeat is a replay.
  Layout: holds       the movement layout, then KEYS[5] holdsActive, KEYS[6] holdsEnded (lib/prologue.lua)
  KEYS[7] hold          hash   the hold, with the items it settled (lib/holds.lua)
  ARGV[5] kind          'items'|'budget'  the kind of hold this settlement is for
  ARGV[6] itemId        string   which item this is (a repeat is a replay)
  ARGV[7] failed        string   an items hold's failure label, '' when the item was delivered
  ARGV[8] optionalSpent integer  an items hold: optional credits the item used (0..optional)
  ARGV[9] amount        integer  a budget hold: credits to spend (0 renews the lease)
  ARGV[10] leaseMs      integer  lease length from now, unless the hold has its own
  ARGV[11] endedHoldsKeepMs integer how long an ended hold is kept
  KEYS[8] outbox        stream the subject's events (lib/events.lua; written only when one fires)
  ARGV[12] eventsMax    integer  events the outbox holds at most
  Returns: {code, hold hold?, events integer?, eventsDropped integer?}   hold: lib/holds.lua's reply form (absent
    when there is none); events, eventsDropped: the events the call wrote, and those it found no room for
    REPLAYED: this item was settled before; nothing changed.
    Codes: OK, REPLAYED, NO_ACCOUNT, NO_HOLD, WRONG_HOLD_KIND, HOLD_ENDED, LEASE_EXPIRED,
    BUDGET_EXHAUSTED, TOO_MANY_LABELS (nothing changed), BAD_SETTLEMENT (optionalSpent above
    the item's optional credits)
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/holds.lua"
--@include "lib/events.lua"

local ctx = prologue_move(KEYS, ARGV)
ctx.holdsActiveKey, ctx.holdsEndedKey = KEYS[5], KEYS[6]
local holdKey = KEYS[7]
local kind, itemId, failed = ARGV[5], ARGV[6], ARGV[7]
local optionalSpent, amount, leaseMs = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
ctx.endedKeepMs = tonumber(ARGV[11])
ctx.outboxKey, ctx.eventsMax = KEYS[8], tonumber(ARGV[12])

-- Distinct failure labels one hold may count.
local MAX_LABELS = 16

local a = holds_credits(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
-- Every answer comes once all its checks have run; its writes start with the rollover,
-- whatever the outcome (any call brings the account to its current cycle).
local function answer(code, h)
  cycle_save(ctx, a)
  return { code, h and hold_reply(h) or {}, events_reply(ctx) }
end

local itemField = HOLD_PREFIX.item .. itemId
if redis.call('HEXISTS', holdKey, itemField) == 1 then
  return answer(CODE.REPLAYED, hold_load(holdKey))
end
local h, refused, seen = hold_accepting(ctx, a, holdKey, kind)
if not h then
  return answer(refused, seen)
end

-- The last checks, then the writes.
if kind == 'budget' then
  if amount > h.reserved - h.spent then
    return answer(CODE.BUDGET_EXHAUSTED, h)
  end
elseif failed ~= '' then
  if not h.failed[failed] and h.labels >= MAX_LABELS then
    return answer(CODE.TOO_MANY_LABELS, h)
  end
elseif optionalSpent > h.optional then
  return answer(CODE.BAD_SETTLEMENT, h)
end
cycle_save(ctx, a)

local reason = 'settled'
if kind == 'budget' then
  hold_spend(ctx, a, h, amount)
  if amount > 0 then
    h.delivered = h.delivered + 1
  end
  reason = 'exhausted'
elseif failed ~= '' then
  if not h.failed[failed] then
    h.labels = h.labels + 1
  end
  h.failed[failed] = (h.failed[failed] or 0) + 1
  local words = {}
  for label, n in pairs(h.failed) do
    words[#words + 1] = label .. '=' .. n
  end
  redis.call('HSET', holdKey, HOLD.labels, h.labels, HOLD.failedLabels, table.concat(words, ' '))
else
  hold_spend(ctx, a, h, h.required + optionalSpent)
  h.delivered = h.delivered + 1
  h.optionalSpent = h.optionalSpent + optionalSpent
end
h.settled = h.settled + 1

hold_renew(ctx, h, leaseMs)
redis.call('HSET', holdKey, itemField, 1, HOLD.settled, h.settled, HOLD.delivered, h.delivered,
  HOLD.optionalSpent, h.optionalSpent, HOLD.spent, h.spent)
if (kind == 'items' and h.settled >= h.items) or (kind == 'budget' and h.spent >= h.reserved) then
  hold_end(ctx, a, h, 'completed', reason)
end
holds_save_credits(ctx, a)
return { CODE.OK, hold_reply(h), events_reply(ctx) }
