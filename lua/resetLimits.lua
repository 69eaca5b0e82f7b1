--[[
  resetLimits: forget a subject's counts on one surface (src/limits.ts#reset), so its next
  request starts every window afresh.
  KEYS[1] account       hash   the account (lib/account.lua), or with a policy only routes the call
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] surface       string
  ARGV[3] windows       string   a policy's windows (lib/windows.lua); '' reads the account's
  ARGV[4] counters      string   a policy's counter prefix (lua/admitPolicy.lua); '' for the account's
  ARGV[5] stagger       integer  the subject's offset of fixed windows in ms
  Returns: {code}   Codes: OK, NO_ACCOUNT, UNKNOWN_SURFACE
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"
--@include "lib/windows.lua"

local accountKey = KEYS[1]
local nowArg     = ARGV[1]
local surface    = ARGV[2]
local windows    = ARGV[3]
local counters   = ARGV[4]
local stagger    = tonumber(ARGV[5])

local prefix = counters .. surface .. ':'
if windows == '' then
  windows = redis.call('HGET', accountKey, ACCOUNT_PREFIX.windows .. surface)
  if not windows then
    if redis.call('EXISTS', accountKey) == 0 then
      return { CODE.NO_ACCOUNT }
    end
    return { CODE.UNKNOWN_SURFACE }
  end
  prefix = account_counters(accountKey, surface)
end
windows_reset(windows, prefix, clock_now(nowArg), stagger)
return { CODE.OK }
