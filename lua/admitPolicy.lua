--[[
  admitPolicy: count a request of `cost` in every window a policy gives a surface, for a
  subject that needs no account (src/limits.ts with `policy`). Stores nothing but expiring
  counters. cost 0 only looks.
  KEYS[1] counters      prefix the subject's counters of this policy: <prefix><surface>:<seconds>:<window>,
                               all in the subject's slot (no key of this exact name is used)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] surface       string   the policy's surface
  ARGV[3] cost          integer  requests this one counts as; 0 only looks
  ARGV[4] windows       string   the policy's windows of the surface (lib/windows.lua)
  ARGV[5] stagger       integer  the subject's offset of fixed windows in ms; 0 for none
  Returns: {code, windows windows}   windows: lib/windows.lua's reply
    Codes: OK, RATE_LIMITED and COST_EXCEEDS_LIMIT (nothing counted)
]]
--@include "lib/clock.lua"
--@include "lib/windows.lua"

local countersKey = KEYS[1]
local nowArg      = ARGV[1]
local surface     = ARGV[2]
local costArg     = ARGV[3]
local windows     = ARGV[4]
local stagger     = ARGV[5]

return windows_count(windows, countersKey .. surface .. ':', clock_now(nowArg), tonumber(costArg), costArg, tonumber(stagger))
