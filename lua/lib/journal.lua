--[[
  journal: append one credit movement to the account's journal stream, so the balance can
  be reconciled from it (lua/reconcile.lua). Bounded by length or by age; off when the host
  runs memory-tight.
  ctx fields used: accountKey, journalKey, journalTrim ('off' | 'maxlen' | 'minage'),
  journalBound, now.
  Entry fields: k kind, n amount, c cycle it applies to, t time (ms), r reference (op/job id).
  Kinds: grant (cycle opened, balance = n), charge (balance -> spent), reserve (balance ->
  held), spend (held -> spent), refund (held -> balance), refund_ended (held -> refunded of
  an ended cycle; the current balance does not change, SPEC §6).
]]
local function journal_add(ctx, kind, amount, cycle, ref)
  if ctx.journalTrim == 'minage' then
    local oldest = math.max(0, ctx.now - ctx.journalBound)
    redis.call('XADD', ctx.journalKey, 'MINID', '~', oldest, '*',
      'k', kind, 'n', amount, 'c', cycle, 't', ctx.now, 'r', ref)
  else
    redis.call('XADD', ctx.journalKey, 'MAXLEN', '~', ctx.journalBound, '*',
      'k', kind, 'n', amount, 'c', cycle, 't', ctx.now, 'r', ref)
  end
end

-- Journal a movement of account a. The cycle's opening grant is written just before its
-- first movement, not when the cycle opens: a new stream costs Redis about 4 KB, which idle
-- accounts would otherwise carry. a.jg is the last cycle whose grant was written.
local function journal_append(ctx, a, kind, amount, cycle, ref)
  if ctx.journalTrim == 'off' or amount == 0 then
    return
  end
  if cycle == a.cyc and a.jg ~= a.cyc then
    a.jg = a.cyc
    journal_add(ctx, 'grant', a.alw, a.cyc, '')
    redis.call('HSET', ctx.accountKey, 'jg', a.cyc)
  end
  journal_add(ctx, kind, amount, cycle, ref)
end
