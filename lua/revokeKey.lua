--[[
  revokeKey: delete one API key of a subject; it stops working at once.
  KEYS[1] account       hash   the subject's account, which holds its keys (lib/apiKeys.lua)
  ARGV[1] keyId         string
  Returns: {code, revoked 0|1}   revoked: the key existed   Codes: OK
]]
--@include "lib/codes.lua"
--@include "lib/apiKeys.lua"

local accountKey = KEYS[1]
local keyId      = ARGV[1]

local limitsText = redis.call('HGET', accountKey, KEY_FIELD.record .. keyId .. KEY_FIELD.limits)
local revoked = redis.call('HDEL', accountKey, unpack(key_fields(keyId, limitsText or nil))) > 0 and 1 or 0
return { CODE.OK, revoked }
