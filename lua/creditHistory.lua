--[[
  creditHistory: credits spent and refunded per UTC day over the last `days` days, today
  included (lib/history.lua). Days without a movement are left out.
  KEYS[1] account       hash   the account (lib/account.lua); only checked to exist
  KEYS[2] history       hash   credits per day (lib/history.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] days          integer  how many days back, today included
  Returns: {code, ...days {day integer, spent integer, refunded integer}}   day: whole days since
    the epoch
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/history.lua"

local accountKey = KEYS[1]
local historyKey = KEYS[2]
local nowArg     = ARGV[1]
local days       = tonumber(ARGV[2])

if redis.call('EXISTS', accountKey) == 0 then
  return { CODE.NO_ACCOUNT }
end
local today = math.floor(clock_now(nowArg) / HISTORY_DAY_MS)
local reply = { CODE.OK }
for _, v in ipairs(history_read(historyKey, today - days + 1)) do
  reply[#reply + 1] = v
end
return reply
