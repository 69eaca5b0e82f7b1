--[[
  clock: "now" for a script. One clock per deployment (SPEC §3): the caller passes its
  injected time in ms, or -1 to use the Redis server's TIME so that every app server agrees.
]]
local function clock_now(argMs)
  local ms = tonumber(argMs)
  if ms ~= nil and ms >= 0 then
    return ms
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
