--[[
  clock: "now" for a script. One clock per deployment (docs/accounts.md#billing-cycles): the caller passes its
  injected time in ms, or -1 to use the Redis server's TIME so that every app server agrees.
]]
local function clock_now(argMs)
  if argMs ~= '-1' then
    return tonumber(argMs)
  end
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end
