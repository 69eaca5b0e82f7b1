--[[
  renewIdempotency: the holder of a pending Idempotency-Key claim extends it to
  now + lockTtlMs while its work goes on (SPEC §7), so that a claim only outlives a holder
  that stopped (crashed, hung) by lockTtlMs. A claim that lapsed and was not taken by anyone
  is still the holder's; one another request took, or one already resolved, is not renewed.
  KEYS[1] record        hash   the key's record (lib/idempotency.lua)
  ARGV[1] nowMs         integer injected time, or -1 for Redis TIME
  ARGV[2] token         string  the token given to beginIdempotency
  ARGV[3] lockTtlMs     integer how long the renewed claim lasts
  Returns: {code}   Codes: OK (renewed), IDEMPOTENCY_IN_USE (the claim is no longer the token's)
]]
--@include "lib/clock.lua"
--@include "lib/idempotency.lua"

local recordKey = KEYS[1]
local nowArg    = ARGV[1]
local token     = ARGV[2]
local lockTtlMs = tonumber(ARGV[3])

local rec = redis.call('HMGET', recordKey, 'st', 'tok', 'fp')
if rec[1] ~= 'pending' or rec[2] ~= token then
  return { CODE.IDEMPOTENCY_IN_USE }
end
idempotency_claim(recordKey, rec[3], token, clock_now(nowArg), lockTtlMs)
return { CODE.OK }
