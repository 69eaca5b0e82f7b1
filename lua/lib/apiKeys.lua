--[[
  apiKeys: the API keys of one subject (src/apiKeys.ts), stored in its account hash beside the
  account's own fields, so a key is checked with the same read that admits the request. A key
  is never stored: only a digest of it.
    KEY_FIELD.record .. keyId               '<digest> <expiresAt ms, 0 for never> <surfaces:
                                            comma-separated, * for any>'
    KEY_FIELD.record .. keyId .. KEY_FIELD.info   '<createdAt ms> <name>' (read only by lists)
  Both stay under 64 bytes, so the account hash keeps its compact encoding. A key with its own
  windows (docs/limits.md, "Per-key limits") has ' L' appended to its record, and two more
  kinds of field, read only when the record says so:
    KEY_FIELD.record .. keyId .. KEY_FIELD.limits   'surface=spec;...' (spaces of a spec as commas)
    KEY_FIELD.record .. keyId .. KEY_FIELD.counts .. surface   the key's counts on that surface
                                            (lib/windows.lua's state)
]]
--@include "codes.lua"

--@const
local KEY_FIELD = { record = 'k:', info = '.i', limits = '.l', counts = '.c:' }

-- Every field of a key: its record and info, and with its own windows (limitsText, the
-- limits field's value) those and each surface's counts.
local function key_fields(keyId, limitsText)
  local field = KEY_FIELD.record .. keyId
  local fields = { field, field .. KEY_FIELD.info }
  if limitsText then
    fields[3] = field .. KEY_FIELD.limits
    for surface in string.gmatch(limitsText, '([^=;]+)=') do
      fields[#fields + 1] = field .. KEY_FIELD.counts .. surface
    end
  end
  return fields
end

-- The subject's keys that have not expired: {keyId, expiresAt, surfaces, createdAt, name},
-- and the fields of the expired ones, for the caller to delete once its checks are done.
local function keys_load(accountKey, now)
  local flat, byId, keys, expired = redis.call('HGETALL', accountKey), {}, {}, {}
  local prefix, info = KEY_FIELD.record, KEY_FIELD.info
  for i = 1, #flat, 2 do
    local field = flat[i]
    if string.sub(field, 1, #prefix) == prefix then
      -- Key ids have no '.': what follows one names the kind of field.
      local id, kind = string.match(string.sub(field, #prefix + 1), '^([^.]*)(.*)$')
      local entry = byId[id] or { keyId = id }
      byId[id] = entry
      if kind == info then
        local createdAt, name = string.match(flat[i + 1], '^(%d+) ?(.*)$')
        entry.createdAt, entry.name = tonumber(createdAt), name
      elseif kind == KEY_FIELD.limits then
        entry.limits = flat[i + 1]
      elseif kind == '' then
        local _, expiresAt, surfaces = string.match(flat[i + 1], '^(%S+) (%d+) (%S+)')
        entry.expiresAt, entry.surfaces = tonumber(expiresAt), surfaces
      end
    end
  end
  for id, entry in pairs(byId) do
    if entry.expiresAt and entry.expiresAt > 0 and now >= entry.expiresAt then
      for _, gone in ipairs(key_fields(id, entry.limits)) do
        expired[#expired + 1] = gone
      end
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
  local stored, expiresAt, surfaces, own = string.match(record, '^(%S+) (%d+) (%S+) ?(L?)$')
  if stored ~= digest then
    return 'unknown'
  end
  expiresAt = tonumber(expiresAt)
  if expiresAt > 0 and now >= expiresAt then
    local limitsText = own == 'L' and redis.call('HGET', accountKey, KEY_FIELD.record .. keyId .. KEY_FIELD.limits) or nil
    redis.call('HDEL', accountKey, unpack(key_fields(keyId, limitsText or nil)))
    return 'expired'
  end
  if surfaces ~= '*' and not string.find(',' .. surfaces .. ',', ',' .. surface .. ',', 1, true) then
    return 'surface_not_allowed'
  end
  return nil
end
