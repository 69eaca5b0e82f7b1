--[[
  windows: the request windows of one subject and surface (docs/limits.md). A surface has 1-4
  windows, written as a spec: '<limit>/<seconds>' for a fixed window, with an 's' appended for
  a sliding one, separated by spaces ('30/60', '10/1 300/60s'). src/windows.ts writes it.
  Each window counts in its own key, <counterPrefix><seconds>:<window number>, in the
  subject's slot; a counter expires two windows after it was opened, so idle subjects keep
  nothing. Window numbers come from the script's clock, so counts are right with an injected
  clock too.
  fixed:   clock-aligned windows, shifted by the subject's stagger offset (stagger % window);
           a request fits when used + cost <= limit; it resets at the window's end.
  sliding: the two-window estimate floor(previous x (1 - elapsed / window)) + current; a
           request fits when estimate + cost <= limit; it "resets" at the end of its current
           window.
  A request is counted in every window or in none: a denied request counts nothing.
  The reply of windows_count is {code, spec, then per window of spec}:
    one fixed window (the common case): remaining, resetMs;
    otherwise, per window: remaining, resetMs, retryMs,
  where remaining is what is left after this request (after nothing when denied) and retryMs
  (0 when the window did not deny) is when the request would fit, -1 when it never can (its
  cost is above the limit). A denying fixed window's retry is its reset. The caller may append
  more (lib/admit.lua appends the balance of a pre-check).
]]
--@include "codes.lua"

-- Any number of windows, fixed or sliding: read every count, decide, then count in all.
--@rare
local function windows_many(reply, spec, counterPrefix, now, cost, stagger)
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

  local windows, code = {}, CODE.OK
  for limit, seconds, kind in string.gmatch(spec, '(%d+)/(%d+)(s?)') do
    local w = { limit = tonumber(limit), seconds = tonumber(seconds), sliding = kind == 's' }
    local windowMs = w.seconds * 1000
    local offset = w.sliding and 0 or stagger % windowMs
    local window = math.floor((now - offset) / windowMs)
    w.windowMs = windowMs
    w.elapsed = now - offset - window * windowMs
    w.key = counterPrefix .. seconds .. ':' .. window
    w.current = tonumber(redis.call('GET', w.key) or 0)
    w.used = w.current
    if w.sliding then
      w.previous = tonumber(redis.call('GET', counterPrefix .. seconds .. ':' .. (window - 1)) or 0)
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
    windows[#windows + 1] = w
  end
  local counted = code == CODE.OK and cost > 0
  for _, w in ipairs(windows) do
    if counted then
      if redis.call('INCRBY', w.key, cost) == cost then
        redis.call('PEXPIRE', w.key, 2 * w.windowMs)
      end
      w.used = w.used + cost
    end
    local n = #reply
    reply[n + 1], reply[n + 2], reply[n + 3] = math.max(0, w.limit - w.used), w.windowMs - w.elapsed, w.retryMs
  end
  reply[1] = code
  return reply
end

-- Count a request of `cost` (0: only look) in every window of spec; the reply described
-- above. One fixed window runs straight-line; costArg is cost as the caller sent it, so the
-- counter commands take it without a number-to-text step.
local function windows_count(spec, counterPrefix, now, cost, costArg, stagger)
  local limit, seconds = string.match(spec, '^(%d+)/(%d+)$')
  if not limit then
    return windows_many({ CODE.OK, spec }, spec, counterPrefix, now, cost, stagger)
  end
  limit = tonumber(limit)
  local windowMs = seconds * 1000
  local offset = stagger % windowMs
  local window = math.floor((now - offset) / windowMs)
  local resetMs = (window + 1) * windowMs + offset - now
  local key = counterPrefix .. seconds .. ':' .. window
  if cost == 0 or cost > limit then
    local left = math.max(0, limit - tonumber(redis.call('GET', key) or 0))
    return { cost == 0 and CODE.OK or CODE.COST_EXCEEDS_LIMIT, spec, left, resetMs }
  end
  local used = redis.call('INCRBY', key, costArg)
  if used == cost then
    redis.call('PEXPIRE', key, 2 * windowMs)
  end
  if used > limit then
    redis.call('DECRBY', key, costArg)
    return { CODE.RATE_LIMITED, spec, math.max(0, limit - used + cost), resetMs }
  end
  return { CODE.OK, spec, limit - used, resetMs }
end

-- Forget every count of spec's windows (the current and the previous window of each).
local function windows_reset(spec, counterPrefix, now, stagger)
  for _, seconds, kind in string.gmatch(spec, '(%d+)/(%d+)(s?)') do
    local windowMs = tonumber(seconds) * 1000
    local offset = kind == 's' and 0 or stagger % windowMs
    local window = math.floor((now - offset) / windowMs)
    redis.call('DEL', counterPrefix .. seconds .. ':' .. window, counterPrefix .. seconds .. ':' .. (window - 1))
  end
end
