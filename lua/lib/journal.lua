--[[
  journal: append one credit movement to the account's journal stream, so the balance can
  be reconciled from it (lua/reconcile.lua). Bounded by length or by age; off when the host
  runs memory-tight.
  ctx fields used: journalKey, journalTrim ('off' | 'maxlen' | 'minage'), journalBound, now.
  Entry fields: k kind, n amount, c cycle it applies to, t time (ms), r reference (op/job id).
  Kinds: grant (cycle opened, balance = n), charge (balance -> spent), reserve (balance ->
  held), spend (held -> spent), refund (held -> balance), refund_ended (held -> refunded of
  an ended cycle; the current balance does not change, SPEC §6).
]]
local function journal_append(ctx, kind, amount, cycle, ref)
  if ctx.journalTrim == 'off' or (amount == 0 and kind ~= 'grant') then
    return
  end
  local rcall = redis.call
  if ctx.journalTrim == 'minage' then
    local oldest = math.max(0, ctx.now - ctx.journalBound)
    rcall('XADD', ctx.journalKey, 'MINID', '~', oldest, '*',
      'k', kind, 'n', amount, 'c', cycle, 't', ctx.now, 'r', ref or '')
  else
    rcall('XADD', ctx.journalKey, 'MAXLEN', '~', ctx.journalBound, '*',
      'k', kind, 'n', amount, 'c', cycle, 't', ctx.now, 'r', ref or '')
  end
end
