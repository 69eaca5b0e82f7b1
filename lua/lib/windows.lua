--[[
  windows: the request windows of one subject and surface (docs/limits.md). A surface has 1-4
  windows, written as a spec: '<limit>/<seconds>' for a fixed window, with an 's' appended for
  a sliding one, separated by spaces ('30/60', '10/1 300/60s'). src/windows.ts writes it.
  The counts of a surface's windows are one text, its state, kept where the caller keeps it
  (an account's in its own hash, a policy subject's in one expiring key), so counting touches
  no key but the declared one. The state holds one word per window length:
    '<seconds>:<window number>:<count>[:<count of the window before>]'
  A window finds its word by its length, fixed or sliding, so a plan change keeps the count of
  a window of the same length, and a word of a length the plan no longer has is kept until its
  window has passed (a plan changed back finds it). A word whose window number is not the
  current one (or the one before, for the previous count) counts as 0: an old state never needs
  clearing. Window numbers come from the
  script's clock, so counts are right with an injected clock too.
  fixed:   clock-aligned windows, shifted by the subject's stagger offset (stagger % window);
           a request fits when used + cost <= limit; it resets at the window's end.
  sliding: the two-window estimate floor(previous x (1 - elapsed / window)) + current; a
           request fits when estimate + cost <= limit; it "resets" at the end of its current
           window.
  bucket:  '<limit>/<seconds>b<burst>', a token bucket as GCRA: it refills limit tokens per
           window evenly and holds at most burst. Its word is 'b<ms>:<ticks>', its
           theoretical arrival time ms + ticks/limit (a tick is 1/limit ms, so every step is
           whole); a request of cost fits when the time owed after it, in ticks,
           debt + cost x windowMs, is at most burst x windowMs (src/windows.ts keeps that
           product within 2^53). remaining is whole tokens, resetMs when the bucket is full,
           retryMs exact. A word that is not the bucket's own reads as a full bucket.
  A request is counted in every window or in none: a denied request counts nothing, and
  nothing is written before every window has been checked.
  shadow:  '!' after a window ('100/60!', '300/60s!', '5/1b10!') makes it a shadow: it
           counts as usual but never denies; its retryMs still tells when it would have
           denied (src/limits.ts lists those windows as shadowDenials). A shadow bucket that
           would deny takes nothing, as a bucket's denial does.
  in flight: '<limit>c<leaseMs>', last in a spec: at most limit requests at once (see
           windows_leased below); a lease frees its place on release or after leaseMs.
  override: a subject's own windows on a surface (src/limits.ts#override) ride first in its
           state as the word 'o=<spec, commas for spaces>@<expiresAt ms, 0: no end>'; while
           it lasts its spec replaces the plan's or policy's, and the counts, found by window
           length, carry over both ways. Limit 0 (a ban) denies every request rate_limited.
  windows_count returns the reply and, when the request was counted, the new state and how
  long it must be kept (two of the longest window; -1 for ever, an override without an end). The reply is {code, spec, then per window
  of spec}:
    one fixed window (the common case): remaining, resetMs;
    otherwise, per window: remaining, resetMs, retryMs,
  where remaining is what is left after this request (after nothing when denied) and retryMs
  (0 when the window did not deny) is when the request would fit, -1 when it never can (its
  cost is above the limit). A denying fixed window's retry is its reset. The caller may append
  more (lib/admit.lua appends the balance of a pre-check).
]]
--@include "codes.lua"

-- floor(a / b) and a - that x b for whole a >= 0 and b >= 1 up to 2^53: the division of
-- doubles may round across a whole number, which the two checks undo.
local function windows_divmod(a, b)
  local q = math.floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q, a - q * b
end

-- A bucket (limit per windowMs, holding burst) whose word is `word`, asked for `cost` at
-- `now` (cost 0: only looks): its code, retryMs, and the ticks owed before and after the
-- request (the same when it does not fit).
local function windows_bucket(limit, windowMs, burst, word, now, cost)
  local ms, ticks = string.match(word or '', '^b(%d+):(%d+)$')
  local debt, tau = 0, burst * windowMs
  ms = tonumber(ms)
  if ms and ms >= now then
    debt = math.min(tau, (ms - now) * limit + tonumber(ticks))
  end
  if cost > burst then
    return CODE.COST_EXCEEDS_LIMIT, -1, debt, debt
  end
  local after = debt + cost * windowMs
  if after > tau then
    local wait, short = windows_divmod(after - tau, limit)
    return CODE.RATE_LIMITED, short > 0 and wait + 1 or wait, debt, debt
  end
  return CODE.OK, 0, debt, after
end

-- A bucket owing `owed` ticks: whole tokens left, and ms until it is full.
local function windows_bucket_state(limit, windowMs, burst, owed)
  local whole, part = windows_divmod(owed, limit)
  return (windows_divmod(burst * windowMs - owed, windowMs)), part > 0 and whole + 1 or whole
end

-- The word of a bucket owing `owed` ticks at `now`.
local function windows_bucket_word(limit, owed, now)
  local whole, part = windows_divmod(owed, limit)
  return string.format('b%d:%d', now + whole, part)
end

-- Any number of windows, fixed or sliding: read every count, decide, then count in all. one:
-- the spec is one fixed window (whose state holds other lengths' words too), answered in its
-- short form.
--@rare
local function windows_many(spec, state, now, cost, stagger, one)
  -- The sliding estimate at `elapsed` ms into a window of windowMs.
  local function estimate(previous, current, elapsed, windowMs)
    return math.floor(previous * (windowMs - elapsed) / windowMs) + current
  end
  -- First moment t in [from, windowMs) when a window with these counts takes `cost`, or nil.
  local function first_fit(previous, current, from, windowMs, limit, cost)
    local room = limit - current - cost
    if room < 0 then
      return nil
    end
    if previous == 0 then
      return from
    end
    local t = math.max(from, math.floor(windowMs - (room + 1) * windowMs / previous) + 1)
    while t > from and estimate(previous, current, t - 1, windowMs) + cost <= limit do
      t = t - 1
    end
    while t < windowMs and estimate(previous, current, t, windowMs) + cost > limit do
      t = t + 1
    end
    if t >= windowMs then
      return nil
    end
    return t
  end
  -- Ms from now until a sliding window takes `cost` (cost <= limit).
  local function sliding_retry(w)
    local t = first_fit(w.previous, w.current, w.elapsed, w.windowMs, w.limit, cost)
    if t then
      return t - w.elapsed
    end
    t = first_fit(w.current, 0, 0, w.windowMs, w.limit, cost)
    if t then
      return w.windowMs - w.elapsed + t
    end
    -- Not before the window after next, when both counts have slid out.
    return 2 * w.windowMs - w.elapsed
  end

  local words, order = {}, {}
  for name, word in string.gmatch(state or '', '(%d+):(%S+)') do
    words[name] = word
    order[#order + 1] = name
  end
  local windows, code, longestMs = {}, CODE.OK, 0
  for limit, seconds, kind, burst, shadow in string.gmatch(spec, '(%d+)/(%d+)([sb]?)(%d*)(!?)') do
    local w = { limit = tonumber(limit), sliding = kind == 's', name = seconds }
    -- A shadow window's verdict is reported (its retryMs) but never decides.
    local decides = shadow == ''
    local windowMs = tonumber(seconds) * 1000
    if kind == 'b' then
      local verdict
      w.burst, w.windowMs = tonumber(burst), windowMs
      verdict, w.retryMs, w.debt, w.after = windows_bucket(w.limit, windowMs, w.burst, words[seconds], now, cost)
      words[seconds] = nil
      if decides and (verdict == CODE.COST_EXCEEDS_LIMIT or (verdict == CODE.RATE_LIMITED and code == CODE.OK)) then
        code = verdict
      end
      longestMs = math.max(longestMs, windowMs, math.ceil(w.after / w.limit))
    else
      local offset = w.sliding and 0 or stagger % windowMs
      local window = math.floor((now - offset) / windowMs)
      local stored, count, before = string.match(words[seconds] or '', '^(%d+):(%d+):?(%d*)$')
      stored, count = tonumber(stored), tonumber(count)
      words[seconds] = nil
      w.window, w.windowMs = window, windowMs
      w.elapsed = now - offset - window * windowMs
      w.current, w.previous = 0, 0
      if stored == window then
        w.current, w.previous = count, tonumber(before) or 0
      elseif stored == window - 1 then
        w.previous = count
      end
      w.used = w.current
      if w.sliding then
        w.used = estimate(w.previous, w.current, w.elapsed, windowMs)
      end
      w.retryMs = 0
      if cost > w.limit and w.limit > 0 then
        w.retryMs = -1
        if decides then
          code = CODE.COST_EXCEEDS_LIMIT
        end
      elseif cost > 0 and w.used + cost > w.limit then
        w.retryMs = w.sliding and sliding_retry(w) or windowMs - w.elapsed
        if decides and code == CODE.OK then
          code = CODE.RATE_LIMITED
        end
      end
      longestMs = math.max(longestMs, windowMs)
    end
    windows[#windows + 1] = w
  end
  local counted = code == CODE.OK and cost > 0
  local reply, next = { code, spec }, {}
  -- Words of lengths the spec does not have, while their window may still count.
  for _, name in ipairs(order) do
    local stored = words[name] and tonumber(string.match(words[name], '^(%d+)'))
    local owed = words[name] and tonumber(string.match(words[name], '^b(%d+)'))
    if (stored and stored >= math.floor(now / (name * 1000)) - 1) or (owed and owed >= now) then
      next[#next + 1] = name .. ':' .. words[name]
    end
  end
  for _, w in ipairs(windows) do
    local n = #reply
    if w.burst then
      local owed = counted and w.after or w.debt
      reply[n + 1], reply[n + 2] = windows_bucket_state(w.limit, w.windowMs, w.burst, owed)
      reply[n + 3] = w.retryMs
      if owed > 0 then
        next[#next + 1] = w.name .. ':' .. windows_bucket_word(w.limit, owed, now)
      end
    else
      if counted then
        w.current = w.current + cost
        w.used = w.used + cost
      end
      next[#next + 1] = w.name .. (w.previous > 0 and string.format(':%d:%d:%d', w.window, w.current, w.previous) or string.format(':%d:%d', w.window, w.current))
      reply[n + 1], reply[n + 2] = math.max(0, w.limit - w.used), w.windowMs - w.elapsed
      if not one then
        reply[n + 3] = w.retryMs
      end
    end
  end
  if counted then
    return reply, table.concat(next, ' '), 2 * longestMs
  end
  return reply
end

-- windows_count without an override.
local function windows_plain(spec, state, now, cost, stagger)
  local limit, seconds, burst = string.match(spec, '^(%d+)/(%d+)b?(%d*)$')
  if burst and burst ~= '' then
    -- One bucket, straight-line when the state is its word alone.
    local length, word = string.match(state or '', '^(%d+):(b%d+:%d+)$')
    if state and length ~= seconds then
      return windows_many(spec, state, now, cost, stagger)
    end
    limit, burst = tonumber(limit), tonumber(burst)
    local windowMs = seconds * 1000
    local code, retry, _, owed = windows_bucket(limit, windowMs, burst, word, now, cost)
    local remaining, resetMs = windows_bucket_state(limit, windowMs, burst, owed)
    local reply = { code, spec, remaining, resetMs, retry }
    if code == CODE.OK and cost > 0 then
      return reply, seconds .. ':' .. windows_bucket_word(limit, owed, now), 2 * math.max(windowMs, resetMs)
    end
    return reply
  end
  if not limit then
    return windows_many(spec, state, now, cost, stagger)
  end
  limit = tonumber(limit)
  local windowMs = seconds * 1000
  local offset = stagger % windowMs
  local window = math.floor((now - offset) / windowMs)
  local resetMs = (window + 1) * windowMs + offset - now
  local used, previous = 0, 0
  if state then
    -- Straight-line only when the state is this window's word alone.
    local length, stored, count, before = string.match(state, '^(%d+):(%d+):(%d+):?(%d*)$')
    if length ~= seconds then
      return windows_many(spec, state, now, cost, stagger, true)
    end
    stored = tonumber(stored)
    if stored == window then
      used, previous = tonumber(count), tonumber(before) or 0
    elseif stored == window - 1 then
      previous = tonumber(count)
    end
  end
  if cost == 0 or (cost > limit and limit > 0) then
    return { cost == 0 and CODE.OK or CODE.COST_EXCEEDS_LIMIT, spec, math.max(0, limit - used), resetMs }
  end
  if used + cost > limit then
    return { CODE.RATE_LIMITED, spec, math.max(0, limit - used), resetMs }
  end
  used = used + cost
  local word = previous > 0 and string.format(':%d:%d:%d', window, used, previous) or string.format(':%d:%d', window, used)
  return { CODE.OK, spec, limit - used, resetMs }, seconds .. word, 2 * windowMs
end

-- A window reply's numbers in their long form (remaining, resetMs, retryMs per window, and
-- a limit in flight's lease), whatever form windows_plain gave them, appended to out.
local function windows_long_form(reply, out)
  if #reply == 4 and string.find(reply[2], '^%d+/%d+$') then
    local code = reply[1]
    out[#out + 1], out[#out + 2] = reply[3], reply[4]
    out[#out + 1] = code == CODE.RATE_LIMITED and reply[4] or code == CODE.COST_EXCEEDS_LIMIT and -1 or 0
    return
  end
  for i = 3, #reply do
    out[#out + 1] = reply[i]
  end
end

-- A surface with a limit in flight, '<limit>c<leaseMs>' last in its spec: the other windows
-- as windows_plain counts them, then the places. The places taken ride in the state as the
-- word 'L=<next lease id>|<id>@<ends ms>|...'; an ended one is dropped on the next write. A
-- lease id is the ms it was taken at, or one past the last id when that is later, so an id
-- is never given twice while its place could still be released, even if the state is lost. A
-- request takes one place (cost 0 takes none) when the windows take it too; with every
-- place taken it is denied CONCURRENCY, counted nowhere, retryMs until the earliest place
-- ends. Numbers of the limit in flight: remaining places, ms until the earliest ends (0: none
-- taken), retryMs, and the lease id taken (0: none).
--@rare
local function windows_leased(spec, state, now, cost, stagger)
  local others, limit, leaseMs = string.match(spec, '^(.-) ?(%d+)c(%d+)$')
  limit, leaseMs = tonumber(limit), tonumber(leaseMs)
  local word = state and string.match(state, 'L=%S*')
  local rest = state
  if word then
    rest = string.gsub(string.gsub(state, ' ?L=%S*', ''), '^ ', '')
    if rest == '' then
      rest = nil
    end
  end
  local nextId, places, earliest = 0, {}, nil
  if word then
    nextId = tonumber(string.match(word, '^L=(%d+)')) or 0
    for id, ends in string.gmatch(word, '|(%d+)@(%d+)') do
      ends = tonumber(ends)
      if ends > now then
        places[#places + 1] = id .. '@' .. ends
        earliest = math.min(earliest or ends, ends)
      end
    end
  end
  local full = cost > 0 and #places >= limit
  local out, code, next, keepMs = { CODE.OK, spec }, CODE.OK, nil, 0
  if others ~= '' then
    local reply
    reply, next, keepMs = windows_plain(others, rest, now, full and 0 or cost, stagger)
    code = reply[1]
    windows_long_form(reply, out)
  end
  local lease, retry = 0, 0
  if full then
    code, retry = CODE.CONCURRENCY, earliest - now
  elseif code == CODE.OK and cost > 0 then
    lease = math.max(now, nextId)
    places[#places + 1] = lease .. '@' .. (now + leaseMs)
    earliest = math.min(earliest or (now + leaseMs), now + leaseMs)
    local taken = 'L=' .. (lease + 1) .. '|' .. table.concat(places, '|')
    local counts = next or rest
    next = counts and counts .. ' ' .. taken or taken
    keepMs = math.max(keepMs or 0, leaseMs)
  end
  out[1] = code
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4] = limit - #places, earliest and earliest - now or 0, retry, lease
  if lease > 0 then
    return out, next, keepMs
  end
  return out
end

-- windows_plain, or windows_leased for a spec with a limit in flight.
local function windows_inner(spec, state, now, cost, stagger)
  if string.find(spec, 'c', 1, true) then
    return windows_leased(spec, state, now, cost, stagger)
  end
  return windows_plain(spec, state, now, cost, stagger)
end

-- Count a request of `cost` (0: only look) in every window of spec, whose counts are state
-- (nil for none yet): the reply described above, then the new state and its keep time when
-- the request was counted (-1: for ever, an override without an end). One fixed window, or
-- one bucket, runs straight-line. An override in the state replaces spec while it lasts.
local function windows_count(spec, state, now, cost, stagger)
  if not state or string.byte(state, 1) ~= 111 then
    return windows_inner(spec, state, now, cost, stagger)
  end
  local word, override, expires, rest = string.match(state, '^(o=(%S+)@(%d+)) ?(.*)$')
  expires = tonumber(expires)
  if expires ~= 0 and now >= expires then
    -- Over: the plan's windows again, and the override leaves with the next write.
    return windows_inner(spec, rest ~= '' and rest or nil, now, cost, stagger)
  end
  local reply, next, keepMs = windows_inner((string.gsub(override, ',', ' ')), rest ~= '' and rest or nil, now, cost, stagger)
  if next then
    next = word .. ' ' .. next
    keepMs = expires == 0 and -1 or math.max(keepMs, expires - now)
  end
  return reply, next, keepMs
end

-- state without the words of spec's window lengths (their counts forgotten), or nil when
-- nothing is left.
local function windows_forget(spec, state)
  -- An override stays, and the counts of its windows go too.
  local override = state and string.match(state, '^o=%S+')
  local gone, kept = {}, { override }
  for _, seconds in string.gmatch(spec .. ' ' .. (override or ''), '(%d+)/(%d+)') do
    gone[seconds] = true
  end
  for name, word in string.gmatch(state or '', '(%d+):(%S+)') do
    if not gone[name] then
      kept[#kept + 1] = name .. ':' .. word
    end
  end
  return #kept > 0 and table.concat(kept, ' ') or nil
end
