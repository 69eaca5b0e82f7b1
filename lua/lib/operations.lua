--[[
  operations: the subject's recent operation ids, in one hash, so that a charge sent again (a
  caller's retry, or a client resending a command after a reconnect) applies once, and a hold
  id that was used is never opened again (docs/reliability.md). Fields:
    'o' .. operationId   '<atMs> <charged> <required>:<optional> <refunded> <sources>'
                                                a charge the caller named, with its terms (the
                                                same id with other terms is refused:
                                                OPERATION_REUSED), what credits.refund gave back
                                                of it and the sources that paid (lib/grants.lua's
                                                drawn list, '-' for none)
                         '<atMs> <charged> <required>:<optional> <refunded> <sources> r'   a
                                                charge the library named (the caller gave none;
                                                a retry with it finds it all the same)
                         '<atMs> <n> <terms> ...'  the other movements named by an operation id
                                                (docs/grants.md), whose terms start with a word:
                                                grant:..., void:..., adjust:..., refund:...
                                                (a charge sent with one of their ids is refused)
    'h' .. holdId        '<atMs>'               a hold whose record was dropped (lib/holds.lua)
    OPERATIONS_META      '<adds><expirySetAtMs> <cleanup cursor> <dueAtMs> <passDueAtMs>'
                         adds: one byte, '0' + the adds since the last cleanup step
  Bounds: a caller's id and a dropped hold's id are kept ttlMs (operationTtlMs), the library's
  own ids OPERATIONS_LIBRARY_KEEP_MS; while the subject holds more than OPERATIONS_MAX ids,
  any older than OPERATIONS_FLOOR_MS go too. The cleanup is incremental, so no call does more
  than a bounded step: every OPERATIONS_CLEANUP_EVERY-th add looks at about
  OPERATIONS_CLEANUP_COUNT more entries (two per add: the hash holds at most about twice the
  ids within their bound) (HSCAN from where the last step stopped) and drops the
  ones past their bound. A step is skipped before dueAtMs, the earliest time an entry may be
  past its shortest bound (min(ttlMs, OPERATIONS_FLOOR_MS) after it was written): each pass
  gathers it in passDueAtMs and keeps it when it ends, so a subject whose ids are all recent
  pays for no scan. An add between steps changes only the meta's first byte: no number is
  turned into text on that path. The hash itself expires 2 x ttlMs after the last write that
  renewed it (renewed once per ttlMs), so an idle subject keeps nothing.
]]

local OPERATIONS_META = '^'
local OPERATIONS_MAX = 1000
local OPERATIONS_FLOOR_MS = 60000
local OPERATIONS_LIBRARY_KEEP_MS = 120000
local OPERATIONS_CLEANUP_EVERY = 32
local OPERATIONS_CLEANUP_COUNT = 64

-- One cleanup step: the entries HSCAN gives from meta.cursor on, those past their bound
-- dropped (more of them while the subject holds over OPERATIONS_MAX ids). The kept entries'
-- earliest due time is gathered in meta.passDue (entries written during the pass are due no
-- sooner than its start + shortestMs), and becomes meta.due when the pass ends.
local function operations_cleanup(opsKey, meta, now, ttlMs, shortestMs)
  local cursor, due, passDue = string.match(meta.tail, '^ (%d+) (%d+) (%d+)$')
  cursor, due, passDue = cursor or '0', tonumber(due) or 0, tonumber(passDue) or 0
  if now < due and due - now <= shortestMs then
    return -- nothing can be due yet (the second test: a clock set back runs the step)
  end
  if cursor == '0' then
    passDue = now + shortestMs
  end
  local crowded = redis.call('HLEN', opsKey) > OPERATIONS_MAX
  local page = redis.call('HSCAN', opsKey, cursor, 'COUNT', OPERATIONS_CLEANUP_COUNT)
  local flat, gone = page[2], {}
  -- Older than these, an entry goes: a library id ends with ' r' (byte 114).
  local callerBefore = now - (crowded and shortestMs or ttlMs)
  local libraryBefore = now - (crowded and OPERATIONS_FLOOR_MS or OPERATIONS_LIBRARY_KEEP_MS)
  for i = 1, #flat, 2 do
    local value = flat[i + 1]
    if flat[i] ~= OPERATIONS_META then
      local at = tonumber(string.match(value, '^%d+'))
      if at <= (string.byte(value, -1) == 114 and libraryBefore or callerBefore) then
        gone[#gone + 1] = flat[i]
      elseif at + shortestMs < passDue then
        passDue = at + shortestMs
      end
    end
  end
  if #gone > 0 then
    redis.call('HDEL', opsKey, unpack(gone))
  end
  if page[1] == '0' then
    due = passDue
  end
  meta.tail = string.format(' %s %d %d', page[1], due, passDue)
end

-- Read an entry and the hash's bookkeeping in one call: the entry's value or false, and the
-- meta as a table {adds, setAt, setAtText, tail} (tail: the meta past the expiry time, kept
-- as text until a cleanup step reads it).
local function operations_read(opsKey, field)
  local v = redis.call('HMGET', opsKey, field, OPERATIONS_META)
  local adds, setAt, tail = string.match(v[2] or '', '^(.)(%d+)( %d+ %d+ %d+)$')
  return v[1], { adds = adds and string.byte(adds) - 48 or 0, setAt = tonumber(setAt) or -1, setAtText = setAt,
    tail = tail or ' 0 0 0' }
end

-- Add an entry (meta as operations_read gave it, brought up to date here for a next add): one
-- HSET, with the hash's expiry renewed once per ttlMs and a cleanup step every few adds.
-- nowText: now as text when the caller has it (saves turning the number into text).
local function operations_add(opsKey, meta, field, value, now, ttlMs, nowText)
  meta.adds = meta.adds + 1
  if meta.adds >= OPERATIONS_CLEANUP_EVERY then
    operations_cleanup(opsKey, meta, now, ttlMs, math.min(ttlMs, OPERATIONS_FLOOR_MS))
    meta.adds = 0
  end
  local keepMs = math.max(ttlMs, OPERATIONS_LIBRARY_KEEP_MS)
  local renew = meta.setAt < 0 or now - meta.setAt >= keepMs or now < meta.setAt
  if renew then
    meta.setAt, meta.setAtText = now, nowText or string.format('%d', now)
  end
  redis.call('HSET', opsKey, field, value, OPERATIONS_META, string.char(48 + meta.adds) .. meta.setAtText .. meta.tail)
  if renew then
    redis.call('PEXPIRE', opsKey, 2 * keepMs)
  end
end
