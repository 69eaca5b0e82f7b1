--[[
  listKeys: a subject's API keys that have not expired, oldest first, without their digests.
  KEYS[1] apiKeys       hash   the subject's API keys (lib/apiKeys.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  Returns: {code, keys}   keys as a JSON list of {keyId, expiresAt, surfaces, createdAt, name}
    Codes: OK
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/apiKeys.lua"

local apiKeysKey = KEYS[1]
local nowArg     = ARGV[1]

return { CODE.OK, cjson.encode(keys_load(apiKeysKey, clock_now(nowArg))) }
