--[[
  admit: count a request of `cost` in every window of an account's surface and, when asked,
  pre-check its balance, in one round trip (body: lib/admit.lua; docs/limits.md). cost 0 only
  looks (src/limits.ts#peek).
  KEYS[1] account       hash   the account (lib/account.lua); its counters are derived from
                               this name (account_counters), in the same slot
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] surface       string   the surface whose windows count the request
  ARGV[3] cost          integer  requests this one counts as; 0 only looks
  ARGV[4] credits       integer  balance needed for the pre-check; 0 skips it
  ARGV[5] stagger       integer  the subject's offset of fixed windows in ms; 0 for none
  Returns: {code, spec, ...windows (lib/windows.lua), balance (with a pre-check)}
    Codes: OK, RATE_LIMITED and COST_EXCEEDS_LIMIT (nothing counted), INSUFFICIENT (counted,
    credits short), NO_ACCOUNT, UNKNOWN_SURFACE
]]
--@include "lib/clock.lua"
--@include "lib/admit.lua"

local accountKey = KEYS[1]
local nowArg     = ARGV[1]
local surface    = ARGV[2]
local costArg    = ARGV[3]
local creditsArg = ARGV[4]
local staggerArg = ARGV[5]

return admit_account(accountKey, clock_now(nowArg), surface, costArg, creditsArg, staggerArg)
