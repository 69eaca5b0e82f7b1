--[[
  operations: the subject's recent operation ids, in one hash, so that a charge sent again (a
  caller's retry, or a client resending a command after a reconnect) applies once, and a hold
  id that was used is never opened again (docs/reliability.md). Fields:
    'o' .. operationId   '<atMs> <charged> <required>:<optional>'     a charge the caller named,
                                                with its terms (the same id with other terms
                                                is refused: OPERATION_REUSED)
                         '<atMs> <charged> <required>:<optional> r'   a charge the library
                                                named (the caller gave none; a retry with it
                                                finds it all the same)
    'h' .. holdId        '<atMs>'               a hold whose record was dropped (lib/holds.lua)
    OPERATIONS_META      '<expirySetAtMs> <entries> <cleanup cursor>'
  Bounds: a caller's id and a dropped hold's id are kept ttlMs (operationTtlMs), the library's
  own ids OPERATIONS_LIBRARY_KEEP_MS; while the subject holds more than OPERATIONS_MAX ids,
  any older than OPERATIONS_FLOOR_MS go too. The cleanup is incremental, so no call does more
  than a bounded step: every OPERATIONS_CLEANUP_EVERY-th add looks at about
  OPERATIONS_CLEANUP_COUNT more entries (two per add: the hash holds at most about twice the
  ids within their bound) (HSCAN from where the last step stopped) and drops the
  ones past their bound. The hash itself expires 2 x ttlMs after the last write that renewed
  it (renewed once per ttlMs), so an idle subject keeps nothing.
]]

local OPERATIONS_META = '^'
local OPERATIONS_MAX = 1000
local OPERATIONS_FLOOR_MS = 60000
local OPERATIONS_LIBRARY_KEEP_MS = 120000
local OPERATIONS_CLEANUP_EVERY = 32
local OPERATIONS_CLEANUP_COUNT = 64

-- One cleanup step: the entries HSCAN gives from meta.cursor on, those past their bound
-- dropped. meta.entries follows; it is recounted once per pass over the hash.
local function operations_cleanup(opsKey, meta, now, ttlMs)
  local page = redis.call('HSCAN', opsKey, meta.cursor, 'COUNT', OPERATIONS_CLEANUP_COUNT)
  local flat, gone = page[2], {}
  local crowded = meta.entries > OPERATIONS_MAX
  -- Older than these, an entry goes: a library id ends with ' r' (byte 114).
  local callerBefore = now - (crowded and math.min(ttlMs, OPERATIONS_FLOOR_MS) or ttlMs)
  local libraryBefore = now - (crowded and OPERATIONS_FLOOR_MS or OPERATIONS_LIBRARY_KEEP_MS)
  for i = 1, #flat, 2 do
    local value = flat[i + 1]
    local at = tonumber(string.match(value, '^%d+'))
    if flat[i] ~= OPERATIONS_META and at <= (string.byte(value, -1) == 114 and libraryBefore or callerBefore) then
      gone[#gone + 1] = flat[i]
    end
  end
  if #gone > 0 then
    meta.entries = meta.entries - redis.call('HDEL', opsKey, unpack(gone))
  end
  meta.cursor = page[1]
  if meta.cursor == '0' then
    meta.entries = redis.call('HLEN', opsKey)
  end
end

-- Read an entry and the hash's bookkeeping in one call: the entry's value or false, and the
-- meta as a table {setAt, entries, cursor}.
local function operations_read(opsKey, field)
  local v = redis.call('HMGET', opsKey, field, OPERATIONS_META)
  local setAt, entries, cursor = string.match(v[2] or '', '^(%d+) (%d+) (%d+)$')
  return v[1], { setAt = tonumber(setAt) or -1, entries = tonumber(entries) or 0, cursor = cursor or '0' }
end

-- Add an entry (meta as operations_read gave it, brought up to date here for a next add): one
-- HSET, with the hash's expiry renewed once per ttlMs and a cleanup step every few adds.
local function operations_add(opsKey, meta, field, value, now, ttlMs)
  meta.entries = meta.entries + 1
  if meta.entries % OPERATIONS_CLEANUP_EVERY == 0 then
    operations_cleanup(opsKey, meta, now, ttlMs)
  end
  local setAt, keepMs = meta.setAt, math.max(ttlMs, OPERATIONS_LIBRARY_KEEP_MS)
  if setAt < 0 or now - setAt >= keepMs or now < setAt then
    setAt = now
  end
  redis.call('HSET', opsKey, field, value, OPERATIONS_META, string.format('%d %d ', setAt, meta.entries) .. meta.cursor)
  if setAt ~= meta.setAt then
    redis.call('PEXPIRE', opsKey, 2 * keepMs)
  end
  meta.setAt = setAt
end
