--[[
  grants: credit grants (docs/grants.md): credits added beside the cycle's allowance, each a
  source debits draw from in one spend order. Stored in the account hash only while the
  account has live or pending grants, so an account that never had one reads and writes
  nothing more (docs/grants.md#storage):
    ACCOUNT_PREFIX.grantTerms .. n    '<kind><priority> <createdAt> <effectiveAt> <expiresAt, 0: never> <amount>'
                                      kind: P paid, M promotional, A adjustment; in lower
                                      case once its grant.expiring was written (lib/events.lua)
    ACCOUNT_PREFIX.grantCredits .. n  '<remaining> <spent> <held>'
    ACCOUNT.grantOrder   the spend order of the active sources: grant numbers and 'c' (the
                         current cycle), space-separated; kept sorted on every change of the
                         set (a grant added, voided, activated or expired, a cycle started), so
                         a debit walks it from the front and never sorts
    ACCOUNT.extras       holds a.grantSum, the remaining credits of the active grants
                         (available = balance + grantSum), and a.grantNext, the next instant
                         a grant activates or expires (-1: none); a script that finds now past
                         it rolls the grants (grants_roll) first (lib/account.lua)
    ACCOUNT.grantSeq     the last grant number issued
  Both fields of a grant stay under 64 bytes, so the account hash keeps its compact encoding.
  Ended grants move to the cycles hash (a movement's KEYS[2]): GRANT_ARCHIVE.record .. n holds
  the terms and '<spent> <held> <expired> <voided> <refundedAfterEnd> <endedAt> <status>'
  (status e expired, v voided, u used), GRANT_ARCHIVE.ended the archived numbers, oldest
  first, at most ENDED_GRANTS_KEPT; GRANT_ARCHIVE.reason .. n a grant's reason.
  Sources are named in drawn lists as 'c<cycle>=<amount>' and 'g<n>=<amount>', comma-separated,
  in draw order (a charge's operation record, a hold's sources).
  A roll is worked out in the account table a (cycle_current_account) and written by
  grants_save, which cycle_save calls: no write before a script's last check.
]]
--@include "account.lua"
--@include "journal.lua"

--@const
local GRANT_ARCHIVE = { record = 'g', reason = 'gr', ended = 'ge' }

local ENDED_GRANTS_KEPT = 100
local GRANT_PLAN_PRIORITY = 50

local GRANT_KIND_CODE = { paid = 'P', promotional = 'M', adjustment = 'A' }
local GRANT_KIND_NAME = { P = 'paid', M = 'promotional', A = 'adjustment' }
-- Spend order of the kinds on a tie of priority and expiry (src/rules/grants.ts KIND_RANK).
local GRANT_KIND_RANK = { promotional = 0, plan = 1, adjustment = 2, paid = 3 }

-- A grant whose grant.expiring was written (lua/tidyHolds.lua) has its kind in lower case.
local function grant_terms_text(g)
  local code = GRANT_KIND_CODE[g.kind]
  return string.format('%s%d %d %d %d %d', g.noticed and string.lower(code) or code, g.priority, g.createdAt, g.effectiveAt, g.expiresAt, g.amount)
end

local function grant_credits_text(g)
  return string.format('%d %d %d', g.remaining, g.spent, g.held)
end

local function grant_terms_parse(g, terms)
  local k, p, c, e, x, amount = string.match(terms, '^(%a)(%d+) (%d+) (%d+) (%d+) (%d+)')
  g.kind, g.priority, g.createdAt = GRANT_KIND_NAME[string.upper(k)], tonumber(p), tonumber(c)
  g.noticed = k ~= string.upper(k) or nil
  g.effectiveAt, g.expiresAt, g.amount = tonumber(e), tonumber(x), tonumber(amount)
  return g
end

-- A live or pending grant from its two fields.
local function grant_parse(n, terms, credits)
  local r, s, h = string.match(credits, '^(%d+) (%d+) (%d+)$')
  return grant_terms_parse({ n = n, remaining = tonumber(r), spent = tonumber(s), held = tonumber(h),
    expired = 0, voided = 0, refundedAfterEnd = 0 }, terms)
end

local function grant_archived_text(g)
  return string.format('%s %d %d %d %d %d %d %s', grant_terms_text(g), g.spent, g.held, g.expired, g.voided,
    g.refundedAfterEnd, g.endedAt, g.status)
end

-- An ended grant from its archived record.
local function grant_archived_parse(n, record)
  local s, h, x, v, r, e, status = string.match(record, ' (%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (%a)$')
  return grant_terms_parse({ n = n, remaining = 0, spent = tonumber(s), held = tonumber(h), expired = tonumber(x),
    voided = tonumber(v), refundedAfterEnd = tonumber(r), endedAt = tonumber(e), status = status }, record)
end

-- a.grants[n]: the live and pending grants of an account table from account_load.
local function grants_of(a)
  if not a.grants then
    a.grants = {}
    for n, terms in pairs(a.grantTerms or {}) do
      a.grants[n] = grant_parse(n, terms, a.grantCredits[n])
    end
  end
  return a.grants
end

-- The spend order (docs/grants.md#spend-order; src/rules/grants.ts compareSources): priority
-- ascending, expiry soonest (none last), kind, effectiveAt, createdAt, number (the cycle 0).
local function grants_before(x, y)
  if x.priority ~= y.priority then
    return x.priority < y.priority
  end
  local xe, ye = x.expiresAt > 0 and x.expiresAt or math.huge, y.expiresAt > 0 and y.expiresAt or math.huge
  if xe ~= ye then
    return xe < ye
  end
  local xk, yk = GRANT_KIND_RANK[x.kind], GRANT_KIND_RANK[y.kind]
  if xk ~= yk then
    return xk < yk
  end
  if x.effectiveAt ~= y.effectiveAt then
    return x.effectiveAt < y.effectiveAt
  end
  if x.createdAt ~= y.createdAt then
    return x.createdAt < y.createdAt
  end
  return x.n < y.n
end

-- The current cycle as a source of the spend order.
local function grants_cycle_source(a)
  return { n = 0, token = 'c', kind = 'plan', priority = GRANT_PLAN_PRIORITY, expiresAt = a.cycleEnd,
    effectiveAt = a.cycleStart, createdAt = a.cycleStart }
end

-- Recompute a's order, sum and next roll from a.grants at ctx.now (no grant left: none of
-- the three is kept). Written by grants_save.
local function grants_refresh(ctx, a)
  local sources, sum, nextRoll, live = { grants_cycle_source(a) }, 0, -1, 0
  for _, g in pairs(grants_of(a)) do
    live = live + 1
    local at
    if g.effectiveAt <= ctx.now then
      sources[#sources + 1] = g
      sum = sum + g.remaining
      at = g.expiresAt > 0 and g.expiresAt or nil
    else
      at = g.effectiveAt
    end
    if at and (nextRoll < 0 or at < nextRoll) then
      nextRoll = at
    end
  end
  a.grantsDirty = true
  if live == 0 then
    a.grantOrder, a.grantSum, a.grantNext = nil, 0, -1
    return
  end
  table.sort(sources, grants_before)
  local tokens = {}
  for i, s in ipairs(sources) do
    tokens[i] = s.token or string.format('%d', s.n)
  end
  a.grantOrder, a.grantSum, a.grantNext = table.concat(tokens, ' '), sum, nextRoll
end

-- End grant g now (status 'e' expired, 'v' voided, 'u' used and archived to make room):
-- what is left goes to expired or voided; what it holds stays held. Returns what was left.
local function grants_end(a, g, status, endedAt, ref)
  local left = g.remaining
  if status == 'e' then
    g.expired = g.expired + left
  elseif status == 'v' then
    g.voided = g.voided + left
  end
  g.remaining, g.status, g.endedAt = 0, status, endedAt
  a.grants[g.n] = nil
  a.grantEnded = a.grantEnded or {}
  a.grantEnded[#a.grantEnded + 1] = g
  if left > 0 then
    a.grantJournal = a.grantJournal or {}
    a.grantJournal[#a.grantJournal + 1] = { kind = status == 'e' and 'expire' or 'void', amount = left, n = g.n, ref = ref or '' }
  end
  a.grantsDirty = true
  return left
end

-- Bring a's grants to ctx.now when a roll is due (a grant activates or expires) or the cycle
-- rolled over (its place in the order moved). Expiry is at expiresAt exactly, activation at
-- effectiveAt exactly (docs/grants.md#rolls). A rare path of its own.
--@rare
local function grants_roll(ctx, a, rolled)
  if not a.grantOrder then
    return
  end
  local due = a.grantNext >= 0 and ctx.now >= a.grantNext
  if not (rolled or due) then
    return
  end
  local ended = {}
  for _, g in pairs(grants_of(a)) do
    if g.expiresAt > 0 and g.expiresAt <= ctx.now then
      ended[#ended + 1] = g
    end
  end
  table.sort(ended, function(x, y)
    return x.n < y.n
  end)
  for _, g in ipairs(ended) do
    grants_end(a, g, 'e', g.expiresAt)
  end
  grants_refresh(ctx, a)
end

-- Write what a roll, a new grant or an end worked out in a (cycle_save calls it).
local function grants_save(ctx, a)
  a.grantsDirty = nil
  local set = {}
  for n, g in pairs(a.grants or {}) do
    if g.dirty then
      if g.new then
        set[#set + 1] = ACCOUNT_PREFIX.grantTerms .. n
        set[#set + 1] = grant_terms_text(g)
      end
      set[#set + 1] = ACCOUNT_PREFIX.grantCredits .. n
      set[#set + 1] = grant_credits_text(g)
      g.dirty, g.new = nil, nil
    end
  end
  if a.grantSeqDirty then
    a.grantSeqDirty = nil
    set[#set + 1] = ACCOUNT.grantSeq
    set[#set + 1] = a.grantSeq
  end
  if a.grantOrder then
    set[#set + 1], set[#set + 2] = ACCOUNT.grantOrder, a.grantOrder
  else
    redis.call('HDEL', ctx.accountKey, ACCOUNT.grantOrder)
  end
  set[#set + 1], set[#set + 2] = ACCOUNT.extras, account_extras(a.grantOrder, a.grantSum, a.grantNext, a.events)
  redis.call('HSET', ctx.accountKey, unpack(set))
  local ended = a.grantEnded
  if ended then
    a.grantEnded = nil
    local gone, archive, list = {}, {}, {}
    for n in string.gmatch(redis.call('HGET', ctx.cyclesKey, GRANT_ARCHIVE.ended) or '', '%d+') do
      list[#list + 1] = n
    end
    for _, g in ipairs(ended) do
      gone[#gone + 1] = ACCOUNT_PREFIX.grantTerms .. g.n
      gone[#gone + 1] = ACCOUNT_PREFIX.grantCredits .. g.n
      archive[#archive + 1] = GRANT_ARCHIVE.record .. g.n
      archive[#archive + 1] = grant_archived_text(g)
      list[#list + 1] = string.format('%d', g.n)
    end
    redis.call('HDEL', ctx.accountKey, unpack(gone))
    local over = #list - ENDED_GRANTS_KEPT
    if over > 0 then
      -- The oldest ended go: by endedAt, then number (docs/grants.md#bounds).
      local endedAt, fields = {}, {}
      for i, n in ipairs(list) do
        fields[i] = GRANT_ARCHIVE.record .. n
      end
      local records = redis.call('HMGET', ctx.cyclesKey, unpack(fields))
      for _, g in ipairs(ended) do
        endedAt[string.format('%d', g.n)] = g.endedAt
      end
      for i, n in ipairs(list) do
        endedAt[n] = endedAt[n] or tonumber(string.match(records[i] or '', ' (%d+) %a$') or 0)
      end
      table.sort(list, function(x, y)
        if endedAt[x] ~= endedAt[y] then
          return endedAt[x] < endedAt[y]
        end
        return tonumber(x) < tonumber(y)
      end)
      local dropped, kept = {}, {}
      for i, n in ipairs(list) do
        if i <= over then
          dropped[#dropped + 1] = GRANT_ARCHIVE.record .. n
          dropped[#dropped + 1] = GRANT_ARCHIVE.reason .. n
        else
          kept[#kept + 1] = n
        end
      end
      redis.call('HDEL', ctx.cyclesKey, unpack(dropped))
      -- A grant archived in this call and dropped at once keeps no record.
      local keep = {}
      for _, n in ipairs(kept) do
        keep[n] = true
      end
      local archived = {}
      for i = 1, #archive, 2 do
        if keep[string.sub(archive[i], #GRANT_ARCHIVE.record + 1)] then
          archived[#archived + 1], archived[#archived + 2] = archive[i], archive[i + 1]
        end
      end
      archive, list = archived, kept
    end
    archive[#archive + 1] = GRANT_ARCHIVE.ended
    archive[#archive + 1] = table.concat(list, ' ')
    redis.call('HSET', ctx.cyclesKey, unpack(archive))
  end
  if a.grantJournal then
    for _, e in ipairs(a.grantJournal) do
      journal_source(ctx, e.kind, string.format('%d', e.amount), a.cycle, e.ref, 'g' .. e.n)
    end
    a.grantJournal = nil
  end
end

-- Draw `need` credits from the sources in `order` (the current cycle's balance `balance`),
-- front first, each giving min(its remaining, what is still needed): to spent, or to held
-- with toHeld. Reads one grant field per grant that gives; writes nothing. Returns the parts
-- drawn as a flat list token, amount ('c' or a grant number), the cycle's new balance, the
-- credits taken from grants, and the grants' new credit fields as HSET arguments.
local function grants_draw(accountKey, order, balance, need, toHeld)
  local parts, fields, fromGrants = {}, {}, 0
  for token in string.gmatch(order, '%S+') do
    if token == 'c' then
      local take = balance < need and balance or need
      if take > 0 then
        balance, need = balance - take, need - take
        parts[#parts + 1], parts[#parts + 2] = 'c', take
      end
    else
      local field = ACCOUNT_PREFIX.grantCredits .. token
      local r, s, h = string.match(redis.call('HGET', accountKey, field), '^(%d+) (%d+) (%d+)$')
      r = tonumber(r)
      local take = r < need and r or need
      if take > 0 then
        if toHeld then
          h = tonumber(h) + take
        else
          s = tonumber(s) + take
        end
        fields[#fields + 1], fields[#fields + 2] = field, string.format('%d %d %d', r - take, s, h)
        fromGrants, need = fromGrants + take, need - take
        parts[#parts + 1], parts[#parts + 2] = token, take
      end
    end
    if need == 0 then
      break
    end
  end
  return parts, balance, fromGrants, fields
end

-- One source's part of a drawn list ('c7=5', 'g3=2'): token 'c' (the cycle `cycle`, text) or a
-- grant number, and the amount as text.
local function grants_part_text(token, cycle, amountText)
  return (token == 'c' and 'c' .. cycle or 'g' .. token) .. '=' .. amountText
end

-- A drawn list's text ('c7=5,g3=2') from grants_draw's parts, the cycle being `cycle` (text).
local function grants_parts_text(parts, cycle)
  if #parts == 2 then
    return grants_part_text(parts[1], cycle, string.format('%d', parts[2]))
  end
  local words = {}
  for i = 1, #parts, 2 do
    words[#words + 1] = grants_part_text(parts[i], cycle, string.format('%d', parts[i + 1]))
  end
  return table.concat(words, ',')
end

-- A drawn list as a reply's ...sources {grantId, amount} appended to reply.
local function grants_sources_reply(reply, text)
  for kind, id, amount in string.gmatch(text or '', '(%a)(%d+)=(%d+)') do
    reply[#reply + 1] = kind == 'c' and 'cycle:' .. id or 'g' .. id
    reply[#reply + 1] = tonumber(amount)
  end
  return reply
end

-- The parts of a drawn list covering [from, from + n) of its draw order, as {kind 'c'|'g',
-- id number, amount}, front first (reversed: last drawn first).
local function grants_range(text, from, n, reversed)
  local out, at, to = {}, 0, from + n
  for kind, id, amount in string.gmatch(text, '(%a)(%d+)=(%d+)') do
    amount = tonumber(amount)
    local lo, hi = math.max(at, from), math.min(at + amount, to)
    if hi > lo then
      out[#out + 1] = { kind = kind, id = tonumber(id), amount = hi - lo }
    end
    at = at + amount
  end
  if reversed then
    local back = {}
    for i = #out, 1, -1 do
      back[#back + 1] = out[i]
    end
    return back
  end
  return out
end

-- Move `amount` credits of grant n from one of its numbers to another ('remaining', 'spent',
-- 'held'): in the account while it is live (a.grantSum follows its remaining), else in its
-- archived record, where what would go to remaining goes to voided (a voided grant) or
-- refundedAfterEnd. Returns whether it is live. A grant dropped from the archive takes nothing.
local function grant_move(ctx, a, n, amount, from, to)
  local field = ACCOUNT_PREFIX.grantCredits .. n
  local text = redis.call('HGET', ctx.accountKey, field)
  if text then
    local r, s, h = string.match(text, '^(%d+) (%d+) (%d+)$')
    local g = { remaining = tonumber(r), spent = tonumber(s), held = tonumber(h) }
    g[from], g[to] = g[from] - amount, g[to] + amount
    redis.call('HSET', ctx.accountKey, field, grant_credits_text(g))
    if to == 'remaining' then
      a.grantSum = a.grantSum + amount
    elseif from == 'remaining' then
      a.grantSum = a.grantSum - amount
    end
    return true
  end
  local record = redis.call('HGET', ctx.cyclesKey, GRANT_ARCHIVE.record .. n)
  if record then
    local g = grant_archived_parse(n, record)
    if to == 'remaining' then
      to = g.status == 'v' and 'voided' or 'refundedAfterEnd'
    end
    g[from], g[to] = g[from] - amount, g[to] + amount
    redis.call('HSET', ctx.cyclesKey, GRANT_ARCHIVE.record .. n, grant_archived_text(g))
  end
  return false
end

-- Whether a new grant has room under max live or pending grants: used grants (live, nothing
-- left, nothing held) are archived to make it, oldest first, only when that is enough.
local function grants_room(ctx, a, max)
  local live, used = 0, {}
  for _, g in pairs(grants_of(a)) do
    live = live + 1
    if g.effectiveAt <= ctx.now and g.remaining == 0 and g.held == 0 then
      used[#used + 1] = g
    end
  end
  if live < max then
    return true
  end
  if live - #used >= max then
    return false
  end
  table.sort(used, function(x, y)
    return x.n < y.n
  end)
  for i = 1, live - max + 1 do
    grants_end(a, used[i], 'u', ctx.now)
  end
  return true
end

-- Add a grant to a (written by grants_save); returns its number.
local function grants_add(ctx, a, kind, priority, effectiveAt, expiresAt, amount, ref)
  local n = (a.grantSeq or 0) + 1
  a.grantSeq, a.grantSeqDirty = n, true
  grants_of(a)[n] = { n = n, kind = kind, priority = priority, createdAt = ctx.now, effectiveAt = effectiveAt,
    expiresAt = expiresAt, amount = amount, remaining = amount, spent = 0, held = 0, expired = 0, voided = 0,
    refundedAfterEnd = 0, dirty = true, new = true }
  a.grantJournal = a.grantJournal or {}
  a.grantJournal[#a.grantJournal + 1] = { kind = 'grant', amount = amount, n = n, ref = ref }
  grants_refresh(ctx, a)
  return n
end

-- The soonest-expiring active grant with credits left, as {grantId, expiresAt, amount}, or nil:
-- among the grants in a's order (a tie: the first in spend order).
local function grants_next_expiry(a)
  local best, grants = nil, grants_of(a)
  for token in string.gmatch(a.grantOrder or '', '%d+') do
    local g = grants[tonumber(token)]
    if g.remaining > 0 and g.expiresAt > 0 and (not best or g.expiresAt < best.expiresAt) then
      best = g
    end
  end
  return best and { grantId = 'g' .. best.n, expiresAt = best.expiresAt, amount = best.remaining }
end

local GRANT_STATUS = { e = 'expired', v = 'voided', u = 'used' }

-- A grant as credits.grants lists it (src/records.ts grantFrom reads it).
local function grant_listed(g, status)
  return { grantId = 'g' .. g.n, kind = g.kind, priority = g.priority, amount = g.amount, remaining = g.remaining,
    spent = g.spent, held = g.held, expired = g.expired, voided = g.voided, refundedAfterEnd = g.refundedAfterEnd,
    effectiveAt = g.effectiveAt, expiresAt = g.expiresAt > 0 and g.expiresAt or nil, createdAt = g.createdAt,
    endedAt = g.endedAt, status = status, n = g.n }
end

-- a's grants as listed (docs/grants.md#listing), as a's state has them: those in its order
-- (active, or used) in spend order, then the pending ones by effectiveAt; with ended, the
-- ended ones, newest ended first (with those a roll ended and did not write yet). Reasons
-- read in one call.
local function grants_list(ctx, a, ended)
  local list, grants, ordered = {}, grants_of(a), {}
  for token in string.gmatch(a.grantOrder or '', '%d+') do
    local g = grants[tonumber(token)]
    ordered[g.n] = true
    list[#list + 1] = grant_listed(g, g.remaining > 0 and 'active' or 'used')
  end
  local pending = {}
  for n, g in pairs(grants) do
    if not ordered[n] then
      pending[#pending + 1] = g
    end
  end
  table.sort(pending, function(x, y)
    if x.effectiveAt ~= y.effectiveAt then
      return x.effectiveAt < y.effectiveAt
    end
    return grants_before(x, y)
  end)
  for _, g in ipairs(pending) do
    list[#list + 1] = grant_listed(g, 'pending')
  end
  if ended then
    local gone = {}
    for n in string.gmatch(redis.call('HGET', ctx.cyclesKey, GRANT_ARCHIVE.ended) or '', '%d+') do
      local record = redis.call('HGET', ctx.cyclesKey, GRANT_ARCHIVE.record .. n)
      if record then
        gone[#gone + 1] = grant_archived_parse(tonumber(n), record)
      end
    end
    for _, g in ipairs(a.grantEnded or {}) do
      gone[#gone + 1] = g
    end
    table.sort(gone, function(x, y)
      if x.endedAt ~= y.endedAt then
        return x.endedAt > y.endedAt
      end
      return x.n > y.n
    end)
    for _, g in ipairs(gone) do
      list[#list + 1] = grant_listed(g, GRANT_STATUS[g.status])
    end
  end
  if #list > 0 then
    local fields = {}
    for i, g in ipairs(list) do
      fields[i] = GRANT_ARCHIVE.reason .. g.n
    end
    local reasons = redis.call('HMGET', ctx.cyclesKey, unpack(fields))
    for i, g in ipairs(list) do
      g.reason, g.n = reasons[i] or nil, nil
    end
  end
  return list
end

-- What the active grants of the account at accountKey hold at `now`, read only (the admit
-- pre-check when a roll is due: activations and expiries counted, nothing written).
--@rare
local function grants_available_at(accountKey, now)
  local sum = 0
  for _, g in pairs(grants_of(account_load(accountKey))) do
    if g.effectiveAt <= now and (g.expiresAt == 0 or now < g.expiresAt) then
      sum = sum + g.remaining
    end
  end
  return sum
end
