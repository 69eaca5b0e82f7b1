--[[
  debit: credits taken from an account's sources in spend order (lib/grants.lua) and written in
  the same call: the cycle's balance and spent, the grants' credits, the events (lib/events.lua)
  and the extras (lib/account.lua), with one journal entry per source that gave. A charge and a
  negative adjustment debit this way; a hold draws to held instead (lib/holds.lua).
  The account's credits as the script read them, in s:
    balance spent        the cycle's
    grantSum grantNext   the grants' (grantSum nil: the account has none)
    front order          the spend order's front source, or the whole order if it was read
                         (then the front is its first; neither: the cycle, or the order is read
                         only when the front source cannot pay it all)
    events cycle journalGrant   the events field (nil: none), the cycle and the journal grant as texts
]]
--@include "account.lua"
--@include "grants.lua"
--@include "events.lua"
--@include "journal.lua"

-- Debit `need` credits (needText: the same as text) in spend order, journalled as `kind` with
-- `ref`. Returns the drawn list ('' when nothing was drawn), the cycle's new balance, the
-- credits taken from grants and the events field as written.
local function debit_in_order(ctx, s, need, needText, kind, ref)
  local balance, front = s.balance, s.front or (s.order and string.match(s.order, '^%S+')) or 'c'
  local parts, left, taken, fields = grants_draw(ctx.accountKey, front, balance, need, false)
  if taken + balance - left < need then
    local order = s.order or redis.call('HGET', ctx.accountKey, ACCOUNT.grantOrder) or 'c'
    parts, left, taken, fields = grants_draw(ctx.accountKey, order, balance, need, false)
  end
  if left < balance then
    fields[#fields + 1], fields[#fields + 2] = ACCOUNT.balance, left
    fields[#fields + 1], fields[#fields + 2] = ACCOUNT.spent, s.spent + balance - left
  end
  local grantSum, events = (s.grantSum or 0) - taken, s.events
  if events then
    events = events_moved(ctx, events, left, s.cycle, grantSum)
    fields[#fields + 1], fields[#fields + 2] = ACCOUNT.events, events
  end
  if s.grantSum then
    fields[#fields + 1], fields[#fields + 2] = ACCOUNT.extras, account_extras(front, grantSum, s.grantNext, events)
  end
  if #fields > 0 then
    redis.call('HSET', ctx.accountKey, unpack(fields))
  end
  local grant = s.journalGrant
  for i = 1, #parts, 2 do
    local amount = #parts == 2 and needText or string.format('%d', parts[i + 1])
    if parts[i] == 'c' then
      grant = journal_append(ctx, kind, amount, s.cycle, ref, s.cycle, grant)
    else
      journal_source(ctx, kind, amount, s.cycle, ref, 'g' .. parts[i])
    end
  end
  return #parts > 0 and grants_parts_text(parts, s.cycle) or '', left, taken, events
end
