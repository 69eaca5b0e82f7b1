--[[
  issueKey: store a new API key of a subject that has an account (src/apiKeys.ts#issue): its
  digest, expiry and surfaces. Expired keys are dropped first. At most maxKeys keys that
  never expire; of expiring ones (website sessions) at most maxExpiringKeys, the one that
  expires soonest giving way to a new one.
  Layout: look        KEYS[1] account, ARGV[1] nowMs (lib/prologue.lua)
  ARGV[2] keyId         string   the new key's id
  ARGV[3] keyDigest     string   the new key's digest
  ARGV[4] ttlMs         integer  the key expires this long from now; 0 never
  ARGV[5] surfaces      string   comma-separated surfaces the key may use, '*' for any
  ARGV[6] name          string   a label for lists, '' for none
  ARGV[7] maxKeys       integer  keys that never expire allowed at once
  ARGV[8] maxExpiringKeys integer expiring keys allowed at once
  ARGV[9] limits        string   the key's own windows, 'surface=spec;...' with a spec's spaces as
                                 commas (lib/apiKeys.lua); '' for none
  Returns: {code, createdAt integer, expiresAt integer}   expiresAt 0 for never   Codes: OK, NO_ACCOUNT, KEY_LIMIT, KEY_EXISTS
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/apiKeys.lua"

local accountKey  = KEYS[1]
local nowArg      = ARGV[1]
local keyId       = ARGV[2]
local keyDigest   = ARGV[3]
local ttlMs       = tonumber(ARGV[4])
local surfaces    = ARGV[5]
local name        = ARGV[6]
local maxKeys     = tonumber(ARGV[7])
local maxExpiringKeys = tonumber(ARGV[8])
local limits      = ARGV[9]

if redis.call('EXISTS', accountKey) == 0 then
  return { CODE.NO_ACCOUNT, 0, 0 }
end
local now = clock_now(nowArg)
local recordField, infoField = KEY_FIELD.record .. keyId, KEY_FIELD.record .. keyId .. KEY_FIELD.info
if redis.call('HEXISTS', accountKey, recordField) == 1 then
  return { CODE.KEY_EXISTS, 0, 0 }
end
local expiresAt = 0
if ttlMs > 0 then
  expiresAt = now + ttlMs
end
local keys, gone = keys_load(accountKey, now)
local lasting, expiring = {}, {}
for _, key in ipairs(keys) do
  if key.expiresAt == 0 then
    lasting[#lasting + 1] = key
  else
    expiring[#expiring + 1] = key
  end
end
if expiresAt == 0 and #lasting >= maxKeys then
  return { CODE.KEY_LIMIT, 0, 0 }
end
-- Every check passed: the writes. The expired keys go, and the expiring keys that expire
-- soonest give way to a new one.
if expiresAt > 0 and #expiring >= maxExpiringKeys then
  table.sort(expiring, function(x, y) return x.expiresAt < y.expiresAt end)
  for i = 1, #expiring - maxExpiringKeys + 1 do
    for _, field in ipairs(key_fields(expiring[i].keyId, expiring[i].limits)) do
      gone[#gone + 1] = field
    end
  end
end
if #gone > 0 then
  redis.call('HDEL', accountKey, unpack(gone))
end
if limits == '' then
  redis.call('HSET', accountKey, recordField, keyDigest .. ' ' .. expiresAt .. ' ' .. surfaces, infoField, now .. ' ' .. name)
else
  redis.call('HSET', accountKey, recordField, keyDigest .. ' ' .. expiresAt .. ' ' .. surfaces .. ' L', infoField, now .. ' ' .. name, recordField .. KEY_FIELD.limits, limits)
end
return { CODE.OK, now, expiresAt }
