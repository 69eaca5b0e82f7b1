--[[
  tidyHolds: end the given holds whose lease ran out, with their refunds, and drop the given
  ended holds that are past endedHoldsKeepMs or beyond endedHoldsMax (docs/holds.md), so no
  credit or cap place stays locked and a subject's holds stay bounded. The holds come by id,
  as a read found them (HOLDS_DUE of another script, or this one's reply), so the script
  touches only declared keys and does bounded work; each is checked again here, so a hold that
  was renewed or ended meanwhile is left as it is. Safe to run from many servers at once.
  A dropped hold's id goes to the subject's operations, so an opening sent again with it is
  refused (lib/operations.lua).
  Layout: holds       the movement layout, then KEYS[5] holdsActive, KEYS[6] holdsEnded (lib/prologue.lua)
  KEYS[7] holdList      zset   every hold id scored by creation time (ms)
  KEYS[8] operations    hash   the subject's recent operation ids (lib/operations.lua)
  KEYS[9] outbox        stream the subject's events (lib/events.lua; written only when one fires)
  KEYS[10...] holds     hash   the holds to see, at most 32 (lib/holds.lua)
  ARGV[5] endedHoldsKeepMs integer how long an ended hold is kept
  ARGV[6] endedHoldsMax integer  ended holds kept per subject
  ARGV[7] operationTtlMs integer how long a dropped hold's id is remembered
  ARGV[8] eventsMax     integer  events the outbox holds at most
  Returns: {code, ended integer, dropped integer, nextLeaseMs integer, nextCycleMs integer, events integer,
    eventsDropped integer, ...due string}
    nextLeaseMs -1 when no hold is open; nextCycleMs: when the current cycle ends, on an account
    with events (the sweep starts the next one, docs/events.md#time-driven-events), else -1;
    events, eventsDropped: the events the call wrote, and those it found no room for; due: the
    holds still due, for the next call (none: the subject is tidy)
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/holds.lua"
--@include "lib/operations.lua"
--@include "lib/events.lua"

local ctx = prologue_move(KEYS, ARGV)
ctx.holdsActiveKey, ctx.holdsEndedKey = KEYS[5], KEYS[6]
local holdListKey, operationsKey = KEYS[7], KEYS[8]
ctx.endedKeepMs, ctx.endedMax = tonumber(ARGV[5]), tonumber(ARGV[6])
local operationTtlMs = tonumber(ARGV[7])
ctx.outboxKey, ctx.eventsMax = KEYS[9], tonumber(ARGV[8])

local a = holds_credits(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0, -1, -1, 0, 0 }
end

-- What each given hold is, read before anything is written.
local lapsed, ended = {}, {}
for i = 10, #KEYS do
  local h = hold_load(KEYS[i])
  if h and h.status == 'open' then
    if ctx.now >= h.leaseExpiresAt then
      lapsed[#lapsed + 1] = h
    end
  else
    ended[#ended + 1] = { id = h and h.id or string.match(KEYS[i], '([^:]*)$'), key = KEYS[i], gone = not h }
  end
end

cycle_save(ctx, a)
if #lapsed > 0 then
  for _, h in ipairs(lapsed) do
    hold_end(ctx, a, h, 'completed', 'lease_expired')
  end
  holds_save_credits(ctx, a)
end

-- The ended holds to drop, counted once the lapsed ones have ended: past the count bound, or
-- past their keep time, or already gone.
local over = redis.call('ZCARD', ctx.holdsEndedKey) - ctx.endedMax + 1
local overBound = {}
if over > 0 then
  for _, id in ipairs(redis.call('ZRANGE', ctx.holdsEndedKey, 0, over + HOLDS_TIDY_SLACK - 1)) do
    overBound[id] = true
  end
end
local drop = {}
for _, hold in ipairs(ended) do
  local endedAt = redis.call('ZSCORE', ctx.holdsEndedKey, hold.id)
  if hold.gone or overBound[hold.id] or (endedAt and ctx.now - tonumber(endedAt) >= ctx.endedKeepMs) then
    drop[#drop + 1] = hold
  end
end
if #drop > 0 then
  local _, operations = operations_read(operationsKey, OPERATIONS_META)
  for _, hold in ipairs(drop) do
    redis.call('DEL', hold.key)
    redis.call('ZREM', ctx.holdsEndedKey, hold.id)
    redis.call('ZREM', ctx.holdsActiveKey, hold.id)
    redis.call('ZREM', holdListKey, hold.id)
    operations_add(operationsKey, operations, 'h' .. hold.id, string.format('%d', ctx.now), ctx.now, operationTtlMs)
  end
end

local written, droppedEvents = events_reply(ctx)
local nextCycle = -1
if a.events then
  nextCycle = tonumber(redis.call('HGET', ctx.accountKey, ACCOUNT.cycleEnd))
end
local reply = { CODE.OK, #lapsed, #drop, holds_next_lease(ctx), nextCycle, written, droppedEvents }
for _, id in ipairs(holds_due(ctx, true)) do
  reply[#reply + 1] = id
end
return reply
