--[[
  idempotency: the per-account Idempotency-Key record (docs/idempotency.md).
  Record hash fields: fp fingerprint of the canonical request body; st 'pending' (being
  resolved by the holder of tok, until exp) or 'done'; code and out (JSON) of the stored
  outcome. A pending claim is a lease: exp (ms, the scripts' clock) is renewed by its holder
  while it works (beginIdempotency.lua again); once exp has passed, the key is free again. The record's PEXPIRE only
  collects what is left behind. A lapsed claim never lets a second hold be opened: the hold
  is opened and stored under the key in one script (openHold.lua), which re-checks the record.
  Returns of idempotency_check: nil to go on, or a reply {code, payload} to return as is.
]]
--@include "codes.lua"

local function idempotency_check(recordKey, fingerprint, token, now)
  local rec = redis.call('HMGET', recordKey, 'fp', 'st', 'tok', 'code', 'out', 'exp')
  if not rec[1] then
    return nil
  end
  if rec[2] == 'pending' and rec[6] and tonumber(rec[6]) <= now then
    return nil
  end
  if rec[1] ~= fingerprint then
    return { CODE.IDEMPOTENCY_REUSED, '' }
  end
  if rec[2] == 'done' then
    return { CODE.REPLAYED, rec[5], tonumber(rec[4]) }
  end
  if rec[3] ~= token or token == '' then
    return { CODE.IDEMPOTENCY_IN_USE, '' }
  end
  return nil
end

-- Mark the key pending for token until now + lockTtlMs (a new claim, or its holder renewing it).
local function idempotency_claim(recordKey, fingerprint, token, now, lockTtlMs)
  redis.call('HSET', recordKey, 'fp', fingerprint, 'st', 'pending', 'tok', token, 'exp', now + lockTtlMs)
  redis.call('PEXPIRE', recordKey, lockTtlMs)
end

local function idempotency_store(recordKey, fingerprint, code, payload, ttlMs)
  redis.call('DEL', recordKey)
  redis.call('HSET', recordKey, 'fp', fingerprint, 'st', 'done', 'code', code, 'out', payload)
  redis.call('PEXPIRE', recordKey, ttlMs)
end

-- Drop a pending record held by token: the outcome is not one that is kept (docs/idempotency.md).
local function idempotency_release(recordKey, token)
  local rec = redis.call('HMGET', recordKey, 'st', 'tok')
  if rec[1] == 'pending' and rec[2] == token then
    redis.call('DEL', recordKey)
  end
end
