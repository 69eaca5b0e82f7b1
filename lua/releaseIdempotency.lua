--[[
  releaseIdempotency: forget a pending Idempotency-Key whose request ended in an outcome that
  is not stored (400 / 402 / 403; docs/idempotency.md), so the client may fix it and retry with the key.
  KEYS[1] record        hash   the key's record (lib/idempotency.lua)
  ARGV[1] token         string  the token given to beginIdempotency
  Returns: {code}   Codes: OK
]]
--@include "lib/idempotency.lua"

local recordKey = KEYS[1]
local token     = ARGV[1]

idempotency_release(recordKey, token)
return { CODE.OK }
