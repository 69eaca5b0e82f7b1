--[[
  charge: take required + optional credits atomically (SPEC §5): insufficient when the
  balance is below required, else required + min(optional, balance - required). With an
  operation id a retried charge is applied once: the first outcome is kept for opTtlMs. The
  library gives every charge an id (the caller's, or a random one kept for a shorter time),
  so a command resent by a client after a reconnect is applied once too.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries (written on rollover)
  KEYS[3] journal       stream credit movements
  KEYS[4] operation     string amount charged by this operation id (unused without one)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] required      integer  credits that must all be available
  ARGV[3] optional      integer  credits taken as far as the balance allows
  ARGV[4] operationId   string   the caller's id, a random one, or '' for none
  ARGV[5] opTtlMs       integer  how long an operation id is remembered
  ARGV[6] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[7] journalBound  integer  max entries, or max age in ms
  Returns: {code, charged, balance, needed}
    Codes: OK, INSUFFICIENT (nothing charged), REPLAYED (charged by an earlier call), NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local operationKey = KEYS[4]
local nowArg       = ARGV[1]
local required     = tonumber(ARGV[2])
local optional     = tonumber(ARGV[3])
local operationId  = ARGV[4]
local opTtlMs      = tonumber(ARGV[5])
local journalTrim  = ARGV[6]
local journalBound = tonumber(ARGV[7])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  journalTrim = journalTrim, journalBound = journalBound, now = clock_now(nowArg) }

local a = account_current(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0, required }
end
if operationId ~= '' then
  local earlier = redis.call('GET', operationKey)
  if earlier then
    return { CODE.REPLAYED, tonumber(earlier), a.bal, required }
  end
end

if a.bal < required then
  return { CODE.INSUFFICIENT, 0, a.bal, required }
end
local charged = required + math.min(optional, a.bal - required)
a.bal = a.bal - charged
a.spent = a.spent + charged
account_save_credits(ctx, a)
journal_append(ctx, a, 'charge', charged, a.cyc, operationId)
if operationId ~= '' then
  redis.call('SET', operationKey, charged, 'PX', opTtlMs)
end
return { CODE.OK, charged, a.bal, required }
