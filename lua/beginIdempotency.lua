--[[
  beginIdempotency: look up an Idempotency-Key before the request is validated and its
  work started (SPEC §7). A new key is marked pending for the caller's token, so a
  concurrent request with the same key gets IDEMPOTENCY_IN_USE instead of a second hold.
  KEYS[1] record        hash   the key's record (lib/idempotency.lua)
  ARGV[1] fingerprint   string  hash of the canonical request body
  ARGV[2] token         string  identifies this request while the key is pending
  ARGV[3] lockTtlMs     integer how long a pending mark survives a crashed holder
  Returns: {code, payload, storedCode}
    Codes: OK (go on), REPLAYED (payload = stored outcome, storedCode = its code),
    IDEMPOTENCY_REUSED, IDEMPOTENCY_IN_USE
]]
--@include "lib/idempotency.lua"

local recordKey   = KEYS[1]
local fingerprint = ARGV[1]
local token       = ARGV[2]
local lockTtlMs   = tonumber(ARGV[3])

local found = idempotency_check(recordKey, fingerprint, token)
if found then
  return found
end
redis.call('HSET', recordKey, 'fp', fingerprint, 'st', 'pending', 'tok', token)
redis.call('PEXPIRE', recordKey, lockTtlMs)
return { CODE.OK, '', 0 }
