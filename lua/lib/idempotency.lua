--[[
  idempotency: the per-account Idempotency-Key record (SPEC §7).
  Record hash fields: fp fingerprint of the canonical request body; st 'pending' (being
  resolved by the holder of tok) or 'done'; code and out (JSON) of the stored outcome.
  Returns of idempotency_check: nil to go on, or a reply {code, payload} to return as is.
]]
--@include "codes.lua"

local function idempotency_check(recordKey, fingerprint, token)
  local rec = redis.call('HMGET', recordKey, 'fp', 'st', 'tok', 'code', 'out')
  if not rec[1] then
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

local function idempotency_store(recordKey, fingerprint, code, payload, ttlMs)
  redis.call('DEL', recordKey)
  redis.call('HSET', recordKey, 'fp', fingerprint, 'st', 'done', 'code', code, 'out', payload)
  redis.call('PEXPIRE', recordKey, ttlMs)
end

-- Drop a pending record held by token: the outcome is not one that is kept (SPEC §7).
local function idempotency_release(recordKey, token)
  local rec = redis.call('HMGET', recordKey, 'st', 'tok')
  if rec[1] == 'pending' and rec[2] == token then
    redis.call('DEL', recordKey)
  end
end
