--[[
  verifyKey: check a presented API key and admit its subject, with the credit pre-check, in
  one round trip (src/apiKeys.ts#verify; body: lib/admit.lua). A key that is unknown, expired
  or not for this surface counts nothing.
  KEYS[1] account       hash   the key's subject's account (lib/account.lua); counters derived
  KEYS[2] apiKeys       hash   the subject's API keys (lib/apiKeys.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] surface       string   the surface whose windows count the request
  ARGV[3] cost          integer  requests this one counts as
  ARGV[4] credits       integer  balance needed for the pre-check; 0 skips it
  ARGV[5] stagger       integer  the subject's offset of fixed windows in ms; 0 for none
  ARGV[6] keyId         string   the presented key's id
  ARGV[7] keyDigest     string   the presented key's digest
  Returns: as lua/admit.lua, or {KEY_REFUSED, reason}   Codes: those of admit, KEY_REFUSED
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/apiKeys.lua"
--@include "lib/admit.lua"

local accountKey = KEYS[1]
local apiKeysKey = KEYS[2]
local nowArg     = ARGV[1]
local surface    = ARGV[2]
local costArg    = ARGV[3]
local creditsArg = ARGV[4]
local staggerArg = ARGV[5]
local keyId      = ARGV[6]
local keyDigest  = ARGV[7]

local now = clock_now(nowArg)
local refusal = key_refusal(apiKeysKey, keyId, keyDigest, surface, now)
if refusal then
  return { CODE.KEY_REFUSED, refusal }
end
return admit_account(accountKey, now, surface, costArg, creditsArg, staggerArg)
