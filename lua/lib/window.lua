--[[
  window: the fixed-window request counters of one account and surface (SPEC §4). Each window
  has its own counter key, <counterPrefix><window number>, in the account's hash slot. The
  window number comes from the script's clock, so counts are right with an injected clock
  too; a counter expires two windows after it was opened, so idle accounts keep none.
]]

-- Count one request in the window containing nowMs unless the window already holds limit
-- requests. Returns whether it was counted, the requests counted in the window after this
-- call, and the ms until the window resets. A denied request leaves the count as it was.
local function window_admit(counterPrefix, nowMs, windowMs, limit)
  local window = math.floor(nowMs / windowMs)
  local counterKey = counterPrefix .. window
  local used = redis.call('INCR', counterKey)
  if used == 1 then
    redis.call('PEXPIRE', counterKey, 2 * windowMs)
  end
  local resetMs = (window + 1) * windowMs - nowMs
  if used > limit then
    redis.call('DECR', counterKey)
    return false, limit, resetMs
  end
  return true, used, resetMs
end

-- Window number containing nowMs and the requests counted in it, without counting.
local function window_used(counterPrefix, nowMs, windowMs)
  local window = math.floor(nowMs / windowMs)
  return window, tonumber(redis.call('GET', counterPrefix .. window) or 0)
end
