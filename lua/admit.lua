--[[
  admit: count one request in the fixed window of a surface, and optionally pre-check the
  credit balance, in one round trip (SPEC §4). A denied request is not counted.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries (written on rollover)
  KEYS[3] journal       stream credit movements (written on rollover)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] surface       'api'|'web'
  ARGV[3] windowMs      integer  window length (60000)
  ARGV[4] credits       integer  balance needed for the pre-check; 0 skips it
  ARGV[5] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[6] journalBound  integer  max entries, or max age in ms
  Returns: {code, limit, remaining, resetMs, balance, needed}
    balance is -1 when no pre-check was asked.
    Codes: OK, RATE_LIMITED (not counted), INSUFFICIENT (counted; credits short), NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local nowArg       = ARGV[1]
local surface      = ARGV[2]
local windowMs     = tonumber(ARGV[3])
local credits      = tonumber(ARGV[4])
local journalTrim  = ARGV[5]
local journalBound = tonumber(ARGV[6])

local limitField, windowField, countField = 'rpa', 'wa', 'ca'
if surface == 'web' then
  limitField, windowField, countField = 'rpw', 'ww', 'cw'
end

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  journalTrim = journalTrim, journalBound = journalBound, now = clock_now(nowArg) }

local v = redis.call('HMGET', accountKey, limitField, windowField, countField, 'bal', 'ce')
if not v[1] then
  return { CODE.NO_ACCOUNT, 0, 0, 0, -1, credits }
end
local limit = tonumber(v[1])
local balance = -1
if credits > 0 then
  balance = tonumber(v[4])
  if ctx.now >= tonumber(v[5]) then
    local a = account_load(ctx)
    account_roll(ctx, a)
    balance = a.bal
  end
end

local window = math.floor(ctx.now / windowMs)
local used = 0
if tonumber(v[2]) == window then
  used = tonumber(v[3])
end
local resetMs = (window + 1) * windowMs - ctx.now
if used >= limit then
  return { CODE.RATE_LIMITED, limit, 0, resetMs, balance, credits }
end
used = used + 1
redis.call('HSET', accountKey, windowField, window, countField, used)

if credits > 0 and balance < credits then
  return { CODE.INSUFFICIENT, limit, limit - used, resetMs, balance, credits }
end
return { CODE.OK, limit, limit - used, resetMs, balance, credits }
