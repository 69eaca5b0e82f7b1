--[[
  verifyKey: check a presented API key and admit its subject, with the credit pre-check, in
  one round trip (src/apiKeys.ts#verify; body: lib/admit.lua). A key that is unknown, expired
  or not for this surface counts nothing.
  KEYS[1] account       hash   the key's subject's account, which holds its keys (lib/account.lua,
                               lib/apiKeys.lua); counters derived from its name
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] surface       string   the surface whose windows count the request
  ARGV[3] cost          integer  requests this one counts as
  ARGV[4] credits       integer  balance needed for the pre-check; 0 skips it
  ARGV[5] stagger       integer  the subject's offset of fixed windows in ms; 0 for none
  ARGV[6] keyId         string   the presented key's id
  ARGV[7] keyDigest     string   the presented key's digest
  Returns KEY_REFUSED: {code, reason 'unknown'|'expired'|'surface_not_allowed'}
  Returns: {code, windows windows, balance integer?}   as lua/admit.lua
    Codes: those of admit, KEY_REFUSED
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/admit.lua"

local accountKey = KEYS[1]
local nowArg     = ARGV[1]
local surface    = ARGV[2]
local costArg    = ARGV[3]
local creditsArg = ARGV[4]
local staggerArg = ARGV[5]
local keyId      = ARGV[6]
local keyDigest  = ARGV[7]

return admit_account(accountKey, clock_now(nowArg), surface, costArg, creditsArg, staggerArg, keyId, keyDigest)
