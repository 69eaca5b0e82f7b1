--[[
  windows: the request windows of one subject and surface (SPEC §4, §10). A surface has 1-4
  windows, written as a spec: '<limit>/<seconds>' for a fixed window, with an 's' appended for
  a sliding one, separated by spaces ('30/60', '10/1 300/60s'). src/plans.ts writes it.
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
  Reply of windows_admit: code, then per window {limit, remaining, resetMs, retryMs, seconds,
  sliding (0|1)}, where remaining is what is left after this request (after nothing when
  denied) and retryMs (denying windows only, else 0) is when the request would fit; -1 when it
  never can (its cost is above the limit).
]]
--@include "codes.lua"

-- Count `cost` (0: only look) in a single fixed window: the common case, straight-line.
local function window_fixed(reply, counterPrefix, now, cost, stagger, limit, seconds)
  local windowMs = seconds * 1000
  local offset = stagger % windowMs
  local window = math.floor((now - offset) / windowMs)
  local resetMs = (window + 1) * windowMs + offset - now
  local n = #reply
  reply[n + 1], reply[n + 3], reply[n + 5], reply[n + 6] = limit, resetMs, seconds, 0
  local key = counterPrefix .. seconds .. ':' .. window
  if cost == 0 or cost > limit then
    reply[n + 2] = math.max(0, limit - tonumber(redis.call('GET', key) or 0))
    if cost == 0 then
      reply[n + 4] = 0
      return CODE.OK
    end
    reply[n + 4] = -1
    return CODE.COST_EXCEEDS_LIMIT
  end
  local used = redis.call('INCRBY', key, cost)
  if used == cost then
    redis.call('PEXPIRE', key, 2 * windowMs)
  end
  if used > limit then
    redis.call('DECRBY', key, cost)
    reply[n + 2], reply[n + 4] = math.max(0, limit - used + cost), resetMs
    return CODE.RATE_LIMITED
  end
  reply[n + 2], reply[n + 4] = limit - used, 0
  return CODE.OK
end

-- The sliding estimate at `elapsed` ms into a window of windowMs.
local function window_estimate(previous, current, elapsed, windowMs)
  return math.floor(previous * (windowMs - elapsed) / windowMs) + current
end

-- Ms from elapsed until a sliding window holds `cost` more (cost <= limit).
local function window_sliding_retry(previous, current, elapsed, windowMs, limit, cost)
  -- First moment t in [from, windowMs) at which the estimate leaves room, or nil.
  local function first_fit(prev, cur, from)
    local room = limit - cur - cost
    if room < 0 then
      return nil
    end
    if prev == 0 then
      return from
    end
    local t = math.max(from, math.floor(windowMs - (room + 1) * windowMs / prev) + 1)
    while t > from and window_estimate(prev, cur, t - 1, windowMs) + cost <= limit do
      t = t - 1
    end
    while t < windowMs and window_estimate(prev, cur, t, windowMs) + cost > limit do
      t = t + 1
    end
    if t >= windowMs then
      return nil
    end
    return t
  end
  local t = first_fit(previous, current, elapsed)
  if t then
    return t - elapsed
  end
  t = first_fit(current, 0, 0)
  if t then
    return windowMs - elapsed + t
  end
  -- Not before the window after next, when both counts have slid out.
  return 2 * windowMs - elapsed
end

-- Any number of windows, fixed or sliding: read every count, decide, then count in all.
local function windows_many(reply, spec, counterPrefix, now, cost, stagger)
  local windows, code = {}, CODE.OK
  for limit, seconds, kind in string.gmatch(spec, '(%d+)/(%d+)(s?)') do
    local w = { limit = tonumber(limit), seconds = tonumber(seconds), sliding = kind == 's' }
    local windowMs = w.seconds * 1000
    local offset = w.sliding and 0 or stagger % windowMs
    local window = math.floor((now - offset) / windowMs)
    w.windowMs = windowMs
    w.elapsed = now - offset - window * windowMs
    w.resetMs = windowMs - w.elapsed
    w.key = counterPrefix .. w.seconds .. ':' .. window
    w.current = tonumber(redis.call('GET', w.key) or 0)
    w.used = w.current
    if w.sliding then
      w.previous = tonumber(redis.call('GET', counterPrefix .. w.seconds .. ':' .. (window - 1)) or 0)
      w.used = window_estimate(w.previous, w.current, w.elapsed, windowMs)
    end
    w.retryMs = 0
    if cost > w.limit then
      w.retryMs = -1
      code = CODE.COST_EXCEEDS_LIMIT
    elseif cost > 0 and w.used + cost > w.limit then
      w.retryMs = w.resetMs
      if w.sliding then
        w.retryMs = window_sliding_retry(w.previous, w.current, w.elapsed, windowMs, w.limit, cost)
      end
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
    reply[n + 1], reply[n + 2], reply[n + 3] = w.limit, math.max(0, w.limit - w.used), w.resetMs
    reply[n + 4], reply[n + 5], reply[n + 6] = w.retryMs, w.seconds, w.sliding and 1 or 0
  end
  return code
end

-- Count a request of `cost` (0: only look) in every window of spec. Appends each window's
-- state to reply and returns OK, RATE_LIMITED or COST_EXCEEDS_LIMIT.
local function windows_admit(reply, spec, counterPrefix, now, cost, stagger)
  local limit, seconds = string.match(spec, '^(%d+)/(%d+)$')
  if limit then
    return window_fixed(reply, counterPrefix, now, cost, stagger, tonumber(limit), tonumber(seconds))
  end
  return windows_many(reply, spec, counterPrefix, now, cost, stagger)
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
