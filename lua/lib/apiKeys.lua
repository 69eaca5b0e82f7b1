--[[
  apiKeys: the API keys of one subject (src/apiKeys.ts), stored in its account hash beside the
  account's own fields, so a key is checked with the same read that admits the request. A key
  is never stored: only a digest of it.
    KEY_FIELD.record .. keyId               '<digest> <expiresAt ms, 0 for never> <surfaces:
                                            comma-separated, * for any>'
    KEY_FIELD.record .. keyId .. KEY_FIELD.info   '<createdAt ms> <name>' (read only by lists)
  Both stay under 64 bytes, so the account hash keeps its compact encoding.
]]
--@include "codes.lua"

--@const
local KEY_FIELD = { record = 'k:', info = '.i' }

-- The subject's keys that have not expired: {keyId, expiresAt, surfaces, createdAt, name},
-- and the fields of the expired ones, for the caller to delete once its checks are done.
local function keys_load(accountKey, now)
  local flat, byId, keys, expired = redis.call('HGETALL', accountKey), {}, {}, {}
  local prefix, info = KEY_FIELD.record, KEY_FIELD.info
  for i = 1, #flat, 2 do
    local field = flat[i]
    if string.sub(field, 1, #prefix) == prefix then
      local id = string.sub(field, #prefix + 1)
      local isInfo = string.sub(id, -#info) == info
      if isInfo then
        id = string.sub(id, 1, -#info - 1)
      end
      local entry = byId[id] or { keyId = id }
      byId[id] = entry
      if isInfo then
        local createdAt, name = string.match(flat[i + 1], '^(%d+) ?(.*)$')
        entry.createdAt, entry.name = tonumber(createdAt), name
      else
        local _, expiresAt, surfaces = string.match(flat[i + 1], '^(%S+) (%d+) (%S+)$')
        entry.expiresAt, entry.surfaces = tonumber(expiresAt), surfaces
      end
    end
  end
  for id, entry in pairs(byId) do
    if entry.expiresAt and entry.expiresAt > 0 and now >= entry.expiresAt then
      expired[#expired + 1] = prefix .. id
      expired[#expired + 1] = prefix .. id .. info
    elseif entry.expiresAt then
      keys[#keys + 1] = entry
    end
  end
  table.sort(keys, function(x, y) return (x.createdAt or 0) < (y.createdAt or 0) end)
  return keys, expired
end

-- Why a presented key, whose stored record was read as `record` (false when there is none),
-- may not be used on surface at now; nil when it may. An unknown key and a wrong digest look
-- the same; an expired key is deleted here. A key that never expires and may use any surface
-- is checked with one comparison.
local function key_refusal(accountKey, keyId, record, digest, surface, now)
  if not record then
    return 'unknown'
  end
  if record == digest .. ' 0 *' then
    return nil
  end
  local stored, expiresAt, surfaces = string.match(record, '^(%S+) (%d+) (%S+)$')
  if stored ~= digest then
    return 'unknown'
  end
  expiresAt = tonumber(expiresAt)
  if expiresAt > 0 and now >= expiresAt then
    redis.call('HDEL', accountKey, KEY_FIELD.record .. keyId, KEY_FIELD.record .. keyId .. KEY_FIELD.info)
    return 'expired'
  end
  if surfaces ~= '*' and not string.find(',' .. surfaces .. ',', ',' .. surface .. ',', 1, true) then
    return 'surface_not_allowed'
  end
  return nil
end
