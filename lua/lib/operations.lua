--[[
  operations: the subject's recent operation ids, in one hash, so that a charge sent again (a
  caller's retry, or a client resending a command after a reconnect) applies once, and a hold
  id that was used is never opened again (docs/reliability.md). Fields:
    'o' .. operationId   '<atMs> <charged>'     a charge the caller named
                         '<atMs> <charged> r'   a charge the library named (the caller gave
                                                none; a retry with it finds it all the same)
    'h' .. holdId        '<atMs>'               a hold whose record was dropped (lib/holds.lua)
    OPERATIONS_META      '<expirySetAtMs> <entries> <prunedAtMs>'
  Bounds: a caller's id and a dropped hold's id are kept ttlMs (operationTtlMs), the library's
  own ids OPERATIONS_LIBRARY_KEEP_MS; past OPERATIONS_MAX entries the oldest go, but never one
  younger than OPERATIONS_FLOOR_MS. Pruning reads the whole hash, so it runs at most once a
  second while the count is past the bound, else once per OPERATIONS_LIBRARY_KEEP_MS: a
  subject holds at most OPERATIONS_MAX entries plus those of its last second, or those of its
  last OPERATIONS_FLOOR_MS when more came in that time. The hash itself expires 2 x ttlMs after the last write that renewed it (renewed
  once per ttlMs; never less than the library's ids need), so an idle subject keeps nothing.
]]

local OPERATIONS_META = '^'
local OPERATIONS_MAX = 1000
local OPERATIONS_FLOOR_MS = 60000
local OPERATIONS_LIBRARY_KEEP_MS = 120000

-- Drop the entries past their age, then the oldest over OPERATIONS_MAX that are older than
-- the floor. Returns how many are left.
--@rare
local function operations_prune(opsKey, now, ttlMs)
  local flat = redis.call('HGETALL', opsKey)
  local kept, gone = {}, {}
  for i = 1, #flat, 2 do
    local field = flat[i]
    if field ~= OPERATIONS_META then
      local value = flat[i + 1]
      local at = tonumber(string.match(value, '^%d+'))
      local keep = string.sub(value, -2) == ' r' and OPERATIONS_LIBRARY_KEEP_MS or ttlMs
      if now - at >= keep then
        gone[#gone + 1] = field
      else
        kept[#kept + 1] = { field = field, at = at }
      end
    end
  end
  local left = #kept
  if left > OPERATIONS_MAX then
    table.sort(kept, function(x, y) return x.at < y.at end)
    local i = 1
    while left > OPERATIONS_MAX and now - kept[i].at >= OPERATIONS_FLOOR_MS do
      gone[#gone + 1] = kept[i].field
      i, left = i + 1, left - 1
    end
  end
  for i = 1, #gone, 1000 do
    redis.call('HDEL', opsKey, unpack(gone, i, math.min(i + 999, #gone)))
  end
  return left
end

-- Read an entry and the hash's bookkeeping in one call: the entry's value or false, and the
-- meta as a table {setAt, entries, prunedAt}.
local function operations_read(opsKey, field)
  local v = redis.call('HMGET', opsKey, field, OPERATIONS_META)
  local setAt, entries, prunedAt = string.match(v[2] or '', '^(%d+) (%d+) (%d+)$')
  return v[1], { setAt = tonumber(setAt) or -1, entries = tonumber(entries) or 0, prunedAt = tonumber(prunedAt) or 0 }
end

-- Add an entry (meta as operations_read gave it, brought up to date here for a next add): one
-- HSET, with the hash's expiry renewed and the old entries pruned only when due.
local function operations_add(opsKey, meta, field, value, now, ttlMs)
  local entries, prunedAt = meta.entries + 1, meta.prunedAt
  local since = now - prunedAt
  if (entries > OPERATIONS_MAX and since >= 1000) or (entries > 16 and since >= OPERATIONS_LIBRARY_KEEP_MS) or since < 0 then
    entries, prunedAt = operations_prune(opsKey, now, ttlMs) + 1, now
  end
  local setAt, keepMs = meta.setAt, math.max(ttlMs, OPERATIONS_LIBRARY_KEEP_MS)
  if setAt < 0 or now - setAt >= keepMs or now < setAt then
    setAt = now
  end
  redis.call('HSET', opsKey, field, value, OPERATIONS_META, string.format('%d %d %d', setAt, entries, prunedAt))
  if setAt ~= meta.setAt then
    redis.call('PEXPIRE', opsKey, 2 * keepMs)
  end
  meta.setAt, meta.entries, meta.prunedAt = setAt, entries, prunedAt
end
