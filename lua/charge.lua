--[[
  charge: take required + optional credits atomically (docs/credits.md#charges): insufficient when the
  balance is below required, else required + min(optional, balance - required). A caller's
  operation id makes a retried charge apply once (its outcome is kept opTtlMs). A charge
  without one carries a short id the library made up, remembered with the account's last few
  such charges (ACCOUNT.recent), so a command a client resends after a reconnect applies once
  too, without a key per charge. Straight-line: the rollover runs only past the cycle's end.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   ended cycles (written on rollover)
  KEYS[3] journal       stream credit movements (lib/journal.lua)
  KEYS[4] history       hash   credits per day (lib/history.lua)
  KEYS[5] operation     string what this operation id charged (untouched without one)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] required      integer  credits that must all be available
  ARGV[3] optional      integer  credits taken as far as the balance allows
  ARGV[4] operationId   string   the caller's id, or ''
  ARGV[5] resendId      string   12 hex digits the library chose when the caller gave no id, or ''
  ARGV[6] opTtlMs       integer  how long a caller's operation id is remembered
  ARGV[7] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[8] journalBound  integer  max entries, or max age in ms
  ARGV[9] historyDays   integer  days of history kept; 0 keeps none
  Returns: {code, charged, balance, needed}
    Codes: OK, INSUFFICIENT (nothing charged), REPLAYED (charged by an earlier call), NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"
--@include "lib/cycle.lua"
--@include "lib/journal.lua"
--@include "lib/history.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local historyKey   = KEYS[4]
local operationKey = KEYS[5]
local nowArg       = ARGV[1]
local required     = tonumber(ARGV[2])
local optional     = tonumber(ARGV[3])
local operationId  = ARGV[4]
local resendId     = ARGV[5]
local opTtlMs      = ARGV[6]
local journalTrim  = ARGV[7]
local journalBound = ARGV[8]
local historyDays  = ARGV[9]

-- Library-made ids of recent charges, 'id=charged ' each; bounded to this many characters.
local RECENT_CHARS = 128

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  historyKey = historyKey, journalTrim = journalTrim, journalBound = journalBound,
  historyDays = tonumber(historyDays), now = clock_now(nowArg) }

-- cycle and journalGrant stay the stored texts: they are only compared and written back.
local v = redis.call('HMGET', accountKey, ACCOUNT.balance, ACCOUNT.spent, ACCOUNT.cycleEnd,
  ACCOUNT.cycle, ACCOUNT.journalGrant, ACCOUNT.recent)
if not v[1] then
  return { CODE.NO_ACCOUNT, 0, 0, required }
end
local balance, spent, cycle, grant, recent = tonumber(v[1]), tonumber(v[2]), v[4], v[5], v[6] or ''
if ctx.now >= tonumber(v[3]) then
  local a = cycle_current_account(ctx)
  balance, spent, cycle, grant, recent = a.balance, a.spent, tostring(a.cycle), tostring(a.journalGrant), a.recent or ''
end

if operationId ~= '' then
  local earlier = redis.call('GET', operationKey)
  if earlier then
    return { CODE.REPLAYED, tonumber(earlier), balance, required }
  end
elseif resendId ~= '' then
  local at = string.find(recent, resendId .. '=', 1, true)
  if at then
    return { CODE.REPLAYED, tonumber(string.match(recent, '^%d+', at + #resendId + 1)), balance, required }
  end
end

if balance < required then
  return { CODE.INSUFFICIENT, 0, balance, required }
end
local charged = required + math.min(optional, balance - required)
balance = balance - charged
spent = spent + charged
-- The amount as text once: the journal, the history and the resend list all write it.
local chargedText = tostring(charged)
if resendId ~= '' then
  recent = recent .. resendId .. '=' .. chargedText .. ' '
  if #recent > RECENT_CHARS then
    recent = string.sub(recent, string.find(recent, ' ', #recent - RECENT_CHARS, true) + 1)
  end
  redis.call('HSET', accountKey, ACCOUNT.balance, balance, ACCOUNT.spent, spent, ACCOUNT.recent, recent)
else
  redis.call('HSET', accountKey, ACCOUNT.balance, balance, ACCOUNT.spent, spent)
end
if operationId ~= '' then
  redis.call('SET', operationKey, chargedText, 'PX', opTtlMs)
end
if charged > 0 then
  journal_append(ctx, 'charge', chargedText, cycle, operationId ~= '' and operationId or resendId, cycle, grant)
  history_add(ctx, 's', charged, chargedText)
end
return { CODE.OK, charged, balance, required }
