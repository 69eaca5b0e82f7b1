--[[
  revokeKey: delete one API key of a subject; it stops working at once.
  KEYS[1] apiKeys       hash   the subject's API keys (lib/apiKeys.lua)
  ARGV[1] keyId         string
  Returns: {code, revoked}   revoked 1 when the key existed   Codes: OK
]]
--@include "lib/codes.lua"

local apiKeysKey = KEYS[1]
local keyId      = ARGV[1]

local revoked = redis.call('HDEL', apiKeysKey, keyId, keyId .. '.i') > 0 and 1 or 0
return { CODE.OK, revoked }
