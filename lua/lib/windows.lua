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
  A request is counted in every window or in none: a denied request counts nothing, and
  nothing is written before every window has been checked.
  windows_count returns the reply and, when the request was counted, the new state and how
  long it must be kept (two of the longest window). The reply is {code, spec, then per window
  of spec}:
    one fixed window (the common case): remaining, resetMs;
    otherwise, per window: remaining, resetMs, retryMs,
  where remaining is what is left after this request (after nothing when denied) and retryMs
  (0 when the window did not deny) is when the request would fit, -1 when it never can (its
  cost is above the limit). A denying fixed window's retry is its reset. The caller may append
  more (lib/admit.lua appends the balance of a pre-check).
]]
--@include "codes.lua"

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
  for limit, seconds, kind in string.gmatch(spec, '(%d+)/(%d+)(s?)') do
    local w = { limit = tonumber(limit), sliding = kind == 's', name = seconds }
    local windowMs = tonumber(seconds) * 1000
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
    if cost > w.limit then
      w.retryMs = -1
      code = CODE.COST_EXCEEDS_LIMIT
    elseif cost > 0 and w.used + cost > w.limit then
      w.retryMs = w.sliding and sliding_retry(w) or windowMs - w.elapsed
      if code == CODE.OK then
        code = CODE.RATE_LIMITED
      end
    end
    longestMs = math.max(longestMs, windowMs)
    windows[#windows + 1] = w
  end
  local counted = code == CODE.OK and cost > 0
  local reply, next = { code, spec }, {}
  -- Words of lengths the spec does not have, while their window may still count.
  for _, name in ipairs(order) do
    local stored = words[name] and tonumber(string.match(words[name], '^(%d+)'))
    if stored and stored >= math.floor(now / (name * 1000)) - 1 then
      next[#next + 1] = name .. ':' .. words[name]
    end
  end
  for _, w in ipairs(windows) do
    if counted then
      w.current = w.current + cost
      w.used = w.used + cost
    end
    next[#next + 1] = w.name .. (w.previous > 0 and string.format(':%d:%d:%d', w.window, w.current, w.previous) or string.format(':%d:%d', w.window, w.current))
    local n = #reply
    reply[n + 1], reply[n + 2] = math.max(0, w.limit - w.used), w.windowMs - w.elapsed
    if not one then
      reply[n + 3] = w.retryMs
    end
  end
  if counted then
    return reply, table.concat(next, ' '), 2 * longestMs
  end
  return reply
end

-- Count a request of `cost` (0: only look) in every window of spec, whose counts are state
-- (nil for none yet): the reply described above, then the new state and its keep time when
-- the request was counted. One fixed window runs straight-line.
local function windows_count(spec, state, now, cost, stagger)
  local limit, seconds = string.match(spec, '^(%d+)/(%d+)$')
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
  if cost == 0 or cost > limit then
    return { cost == 0 and CODE.OK or CODE.COST_EXCEEDS_LIMIT, spec, math.max(0, limit - used), resetMs }
  end
  if used + cost > limit then
    return { CODE.RATE_LIMITED, spec, math.max(0, limit - used), resetMs }
  end
  used = used + cost
  local word = previous > 0 and string.format(':%d:%d:%d', window, used, previous) or string.format(':%d:%d', window, used)
  return { CODE.OK, spec, limit - used, resetMs }, seconds .. word, 2 * windowMs
end

-- state without the words of spec's window lengths (their counts forgotten), or nil when
-- nothing is left.
local function windows_forget(spec, state)
  local gone, kept = {}, {}
  for _, seconds in string.gmatch(spec, '(%d+)/(%d+)') do
    gone[seconds] = true
  end
  for name, word in string.gmatch(state or '', '(%d+):(%S+)') do
    if not gone[name] then
      kept[#kept + 1] = name .. ':' .. word
    end
  end
  return #kept > 0 and table.concat(kept, ' ') or nil
end
