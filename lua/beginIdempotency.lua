--[[
  beginIdempotency: look up an Idempotency-Key before the request is validated and its
  work started (docs/idempotency.md). A new key (or one whose claim lapsed) is claimed for the caller's
  token until now + idempotencyLockMs, so a concurrent request with the same key gets
  IDEMPOTENCY_IN_USE instead of a second hold. The holder renews its claim while it works by
  calling this again with its token: OK extends it; any other code says it is no longer its.
  KEYS[1] record        hash   the key's record (lib/idempotency.lua)
  ARGV[1] nowMs         integer injected time, or -1 for Redis TIME
  ARGV[2] fingerprint   string  hash of the canonical request body
  ARGV[3] token         string  identifies this request while the key is pending
  ARGV[4] idempotencyLockMs integer how long a claim lasts unless its holder renews it
  Returns REPLAYED: {code, outcome json, storedCode integer}   the stored outcome and its code
  Returns: {code}
    Codes: OK (go on), REPLAYED,
    IDEMPOTENCY_REUSED, IDEMPOTENCY_IN_USE
]]
--@include "lib/clock.lua"
--@include "lib/idempotency.lua"

local recordKey   = KEYS[1]
local nowArg      = ARGV[1]
local fingerprint = ARGV[2]
local token       = ARGV[3]
local idempotencyLockMs = tonumber(ARGV[4])

local now = clock_now(nowArg)
local found = idempotency_check(recordKey, fingerprint, token, now)
if found then
  return found
end
idempotency_claim(recordKey, fingerprint, token, now, idempotencyLockMs)
return { CODE.OK, '', 0 }
