--[[
  usage: the account's whole quota state on one surface, without counting a request (SPEC
  §4: the usage endpoint is free). With a key id it first checks the API key, so a usage poll
  is one round trip (src/apiKeys.ts#verify with usage). Rolls the cycle over and ends lapsed
  holds first, so what it reports is current.
  KEYS[1] account       hash   the account, which holds its keys (lib/account.lua, lib/apiKeys.lua)
  KEYS[2] cycles        hash   ended cycles
  KEYS[3] journal       stream credit movements (lib/journal.lua)
  KEYS[4] history       hash   credits per day (lib/history.lua)
  KEYS[5] holdsActive   zset   open hold ids scored by lease expiry (ms)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] surface       string   the surface whose windows are reported
  ARGV[3] stagger       integer  the subject's offset of fixed windows in ms
  ARGV[4] keyId         string   the presented key's id, '' without a key
  ARGV[5] keyDigest     string   the presented key's digest
  ARGV[6] holdPrefix    string   hold hashes are <prefix><holdId> (same slot)
  ARGV[7] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[8] journalBound  integer  max entries, or max age in ms
  ARGV[9] historyDays  integer  days of history kept; 0 keeps none
  Returns KEY_REFUSED: {code, reason 'unknown'|'expired'|'surface_not_allowed'}
  Returns: {code, windows windows, state json}   windows: lib/windows.lua's reply; state: the
    account's attributes plus now and active (open holds)
    Codes: OK, KEY_REFUSED, NO_ACCOUNT, UNKNOWN_SURFACE
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/apiKeys.lua"
--@include "lib/holds.lua"
--@include "lib/windows.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local historyKey   = KEYS[4]
local holdsActiveKey = KEYS[5]
local nowArg       = ARGV[1]
local surface      = ARGV[2]
local stagger      = tonumber(ARGV[3])
local keyId        = ARGV[4]
local keyDigest    = ARGV[5]
local holdPrefix   = ARGV[6]
local journalTrim  = ARGV[7]
local journalBound = ARGV[8]
local historyDays  = tonumber(ARGV[9])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  historyKey = historyKey, holdsActiveKey = holdsActiveKey, holdPrefix = holdPrefix, journalTrim = journalTrim,
  journalBound = journalBound, historyDays = historyDays, now = clock_now(nowArg) }

if keyId ~= '' then
  local record = redis.call('HGET', accountKey, KEY_FIELD.record .. keyId)
  local refusal = key_refusal(accountKey, keyId, record, keyDigest, surface, ctx.now)
  if refusal then
    return { CODE.KEY_REFUSED, refusal }
  end
end
local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
local windows = a.windows[surface]
if not windows then
  return { CODE.UNKNOWN_SURFACE, '' }
end
holds_expire_lapsed(ctx, a)
a.active = redis.call('ZCARD', holdsActiveKey)
a.now = ctx.now
a.recent = nil
local reply = windows_count(windows, account_counters(accountKey, surface), ctx.now, 0, '0', stagger)
reply[#reply + 1] = cjson.encode(a)
return reply
