--[[
  journal: append one credit movement to the account's journal stream, so the balance can be
  reconciled from it (lua/reconcile.lua). Bounded by length or by age; off when the host runs
  memory-tight.
  ctx fields used: accountKey, journalKey, journalTrim ('off' | 'maxlen' | 'minage'),
  journalBound (as the caller sent it), now.
  Entry fields (JOURNAL_ENTRY): kind, amount, cycle it applies to, ref (an operation or hold
  id); the entry's time is its stream id (the Redis server's clock). Kinds: grant (cycle opened, balance = n), charge (balance -> spent),
  reserve (balance -> held), spend (held -> spent), refund (held -> balance), refund_ended
  (held -> refunded of an ended cycle; the current balance does not change; docs/holds.md),
  refund_charge (spent -> balance: credits.refund), adjust (balance -> spent: a negative
  adjustment).
  An entry of a grant's credits (docs/grants.md#journal) carries one more field, source (the
  grant id); its cycle is the current one, and reconcile leaves it out: it is about the
  cycle's allowance. Its kinds: those above, and grant (added), expire, void.
]]
--@include "account.lua"

--@const
local JOURNAL_ENTRY = { kind = 'k', amount = 'n', cycle = 'c', ref = 'r', source = 's' }

local function journal_add(ctx, kind, amount, cycle, ref, source)
  local trim, bound = 'MAXLEN', ctx.journalBound
  if ctx.journalTrim == 'minage' then
    trim, bound = 'MINID', math.max(0, ctx.now - tonumber(ctx.journalBound))
  end
  if source then
    redis.call('XADD', ctx.journalKey, trim, '~', bound, '*', JOURNAL_ENTRY.kind, kind,
      JOURNAL_ENTRY.amount, amount, JOURNAL_ENTRY.cycle, cycle, JOURNAL_ENTRY.ref, ref, JOURNAL_ENTRY.source, source)
    return
  end
  redis.call('XADD', ctx.journalKey, trim, '~', bound, '*', JOURNAL_ENTRY.kind, kind,
    JOURNAL_ENTRY.amount, amount, JOURNAL_ENTRY.cycle, cycle, JOURNAL_ENTRY.ref, ref)
end

-- Journal a movement of grant `source`'s credits (no cycle grant entry: it is not the cycle's).
-- A script without a journal key (a look) journals nothing.
local function journal_source(ctx, kind, amount, cycle, ref, source)
  if not ctx.journalKey or ctx.journalTrim == 'off' or amount == 0 or amount == '0' then
    return
  end
  journal_add(ctx, kind, amount, cycle, ref, source)
end

-- Every entry of the journal, oldest first, as {kind, amount, cycle, time, ref}.
local function journal_read(journalKey)
  local attribute, entries = {}, {}
  for name, field in pairs(JOURNAL_ENTRY) do
    attribute[field] = name
  end
  for _, raw in ipairs(redis.call('XRANGE', journalKey, '-', '+')) do
    local entry, kv = {}, raw[2]
    for i = 1, #kv, 2 do
      entry[attribute[kv[i]]] = kv[i + 1]
    end
    entry.amount, entry.cycle = tonumber(entry.amount), tonumber(entry.cycle)
    entries[#entries + 1] = entry
  end
  return entries
end

-- Journal a movement on cycle `cycle` of an account whose current cycle is currentCycle and
-- whose journalGrant is grant (the three as numbers, or the three as the stored texts). The
-- current cycle's opening grant is written just before its first movement, not when the cycle
-- opens: a new stream costs Redis about 4 KB, which idle accounts would otherwise carry.
-- Returns the journalGrant after the call.
local function journal_append(ctx, kind, amount, cycle, ref, currentCycle, grant)
  if ctx.journalTrim == 'off' or amount == 0 or amount == '0' then
    return grant
  end
  if cycle == currentCycle and grant ~= currentCycle then
    local allowance = redis.call('HGET', ctx.accountKey, ACCOUNT.allowance)
    journal_add(ctx, 'grant', allowance, currentCycle, '')
    redis.call('HSET', ctx.accountKey, ACCOUNT.journalGrant, currentCycle)
    grant = currentCycle
  end
  journal_add(ctx, kind, amount, cycle, ref)
  return grant
end
