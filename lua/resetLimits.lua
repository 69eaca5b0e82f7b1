--[[
  resetLimits: forget a subject's counts on one surface (src/limits.ts#reset), so its next
  request starts every window afresh.
  KEYS[1] account       hash   the account (lib/account.lua); with a policy it only routes the call
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] surface       string
  ARGV[3] windows       string   a policy's windows (lib/windows.lua); '' reads the account's
  ARGV[4] counterBase   string   counters are <counterBase><surface>:<seconds>:<window>
  ARGV[5] stagger       integer  the subject's offset of fixed windows in ms
  Returns: {code}   Codes: OK, NO_ACCOUNT, UNKNOWN_SURFACE
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"
--@include "lib/windows.lua"

local accountKey  = KEYS[1]
local nowArg      = ARGV[1]
local surface     = ARGV[2]
local windows     = ARGV[3]
local counterBase = ARGV[4]
local stagger     = tonumber(ARGV[5])

if windows == '' then
  windows = redis.call('HGET', accountKey, ACCOUNT_PREFIX.windows .. surface)
  if not windows then
    if redis.call('EXISTS', accountKey) == 0 then
      return { CODE.NO_ACCOUNT }
    end
    return { CODE.UNKNOWN_SURFACE }
  end
end
windows_reset(windows, counterBase .. surface .. ':', clock_now(nowArg), stagger)
return { CODE.OK }
