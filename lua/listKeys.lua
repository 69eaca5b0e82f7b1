--[[
  listKeys: a subject's API keys that have not expired, oldest first, without their digests; expired ones are deleted.
  Layout: look        KEYS[1] account, ARGV[1] nowMs (lib/prologue.lua)
  Returns: {code, keys json}   keys: a list of {keyId, expiresAt, surfaces, createdAt, name,
    limits?} (limits: the key's own windows as lib/apiKeys.lua stores them)
    Codes: OK
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/apiKeys.lua"

local accountKey = KEYS[1]
local nowArg     = ARGV[1]

local keys, expired = keys_load(accountKey, clock_now(nowArg))
if #expired > 0 then
  redis.call('HDEL', accountKey, unpack(expired))
end
return { CODE.OK, cjson.encode(keys) }
