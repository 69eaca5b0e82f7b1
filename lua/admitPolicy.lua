--[[
  admitPolicy: count a request of `cost` in every window a policy gives a surface, for a
  subject that needs no account (src/limits.ts with `policy`). Stores nothing but the counts,
  in one key that expires two of its longest window after the last counted request (not
  before a temporary override ends; never while an override without an end stands). cost 0
  only looks.
  KEYS[1] counters      string the subject's counts on this policy and surface (lib/windows.lua's state)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] cost          integer  requests this one counts as; 0 only looks
  ARGV[3] windows       string   the policy's windows of the surface (lib/windows.lua)
  ARGV[4] stagger       integer  the subject's offset of fixed windows in ms; 0 for none
  Returns: {code, windows windows}   windows: lib/windows.lua's reply
    Codes: OK, RATE_LIMITED and COST_EXCEEDS_LIMIT (nothing counted)
]]
--@include "lib/clock.lua"
--@include "lib/windows.lua"

local countersKey = KEYS[1]
local reply, state, keepMs = windows_count(ARGV[3], redis.call('GET', countersKey), clock_now(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4]))
if state then
  if keepMs < 0 then
    redis.call('SET', countersKey, state)
  else
    redis.call('SET', countersKey, state, 'PX', keepMs)
  end
end
return reply
