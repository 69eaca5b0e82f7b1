--[[
  apiKeys: the API keys of one subject (src/apiKeys.ts), stored in one hash in the subject's
  slot. A key is never stored: only a digest of it.
    <keyId>       '<digest> <expiresAt ms, 0 for never> <surfaces: comma-separated, * for any>'
    <keyId>.i     '<createdAt ms> <name>' (read only when keys are listed)
]]
--@include "codes.lua"

-- The subject's keys that have not expired: {keyId, expiresAt, surfaces, createdAt, name};
-- expired ones are deleted on the way.
local function keys_load(keysKey, now)
  local flat, byId, keys, expired = redis.call('HGETALL', keysKey), {}, {}, {}
  for i = 1, #flat, 2 do
    local id, meta = string.match(flat[i], '^([^.]+)(%.?i?)$')
    local entry = byId[id] or { keyId = id }
    byId[id] = entry
    if meta == '.i' then
      local createdAt, name = string.match(flat[i + 1], '^(%d+) ?(.*)$')
      entry.createdAt, entry.name = tonumber(createdAt), name
    else
      local _, expiresAt, surfaces = string.match(flat[i + 1], '^(%S+) (%d+) (%S+)$')
      entry.expiresAt, entry.surfaces = tonumber(expiresAt), surfaces
    end
  end
  for id, entry in pairs(byId) do
    if entry.expiresAt and entry.expiresAt > 0 and now >= entry.expiresAt then
      expired[#expired + 1] = id
      expired[#expired + 1] = id .. '.i'
    elseif entry.expiresAt then
      keys[#keys + 1] = entry
    end
  end
  if #expired > 0 then
    redis.call('HDEL', keysKey, unpack(expired))
  end
  table.sort(keys, function(x, y) return (x.createdAt or 0) < (y.createdAt or 0) end)
  return keys
end

-- Why a presented key may not be used on surface at now, or nil when it may. An unknown key
-- and a wrong digest look the same; an expired key is deleted here.
local function key_refusal(keysKey, keyId, digest, surface, now)
  local record = redis.call('HGET', keysKey, keyId)
  if not record then
    return 'unknown'
  end
  local stored, expiresAt, surfaces = string.match(record, '^(%S+) (%d+) (%S+)$')
  if stored ~= digest then
    return 'unknown'
  end
  expiresAt = tonumber(expiresAt)
  if expiresAt > 0 and now >= expiresAt then
    redis.call('HDEL', keysKey, keyId, keyId .. '.i')
    return 'expired'
  end
  if surfaces ~= '*' and not string.find(',' .. surfaces .. ',', ',' .. surface .. ',', 1, true) then
    return 'surface_not_allowed'
  end
  return nil
end
