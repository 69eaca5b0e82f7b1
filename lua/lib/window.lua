--[[
  window: the fixed-window request counters of one account and surface (SPEC §4). Each window
  has its own counter key, <counterPrefix><window number>, in the account's hash slot. The
  window number comes from the script's clock, so counts are right with an injected clock
  too; a counter expires two windows after it was opened, so idle accounts keep none.
]]

-- Window number containing nowMs and the requests already counted in it.
local function window_used(counterPrefix, nowMs, windowMs)
  local window = math.floor(nowMs / windowMs)
  return window, tonumber(redis.call('GET', counterPrefix .. window) or 0)
end

-- Count one request in the window.
local function window_count(counterPrefix, window, windowMs)
  local counterKey = counterPrefix .. window
  if redis.call('INCR', counterKey) == 1 then
    redis.call('PEXPIRE', counterKey, 2 * windowMs)
  end
end
