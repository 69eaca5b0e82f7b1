--[[
  admit: count one request in the fixed window of a surface, and optionally pre-check the
  credit balance, in one round trip (SPEC §4). A denied request is not counted.
  The hot path of every request: it reads one field of the account (four with a pre-check)
  and the surface's window counter, and needs no rollover: a cycle that has ended opens with the
  next allowance (lua/lib/account.lua), so that is the balance the pre-check sees then.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] surface       'api'|'web'
  ARGV[3] windowMs      integer  window length (60000)
  ARGV[4] credits       integer  balance needed for the pre-check; 0 skips it
  ARGV[5] counterPrefix string   the surface's window counters are <prefix><window> (same slot)
  Returns: {code, limit, remaining, resetMs, balance, needed}
    balance is -1 when no pre-check was asked.
    Codes: OK, RATE_LIMITED (not counted), INSUFFICIENT (counted; credits short), NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/window.lua"

local accountKey    = KEYS[1]
local nowArg        = ARGV[1]
local surface       = ARGV[2]
local windowMs      = tonumber(ARGV[3])
local credits       = tonumber(ARGV[4])
local counterPrefix = ARGV[5]

-- Stored names of rpa / rpw, bal, ce and nalw (ACCOUNT_FIELD in lua/lib/account.lua).
local limitField = surface == 'web' and 'rw' or 'ra'
local now = clock_now(nowArg)
local limit, balance
if credits > 0 then
  local v = redis.call('HMGET', accountKey, limitField, 'b', 'ce', 'na')
  limit = tonumber(v[1])
  balance = tonumber(v[2])
  if limit and now >= tonumber(v[3]) then
    balance = tonumber(v[4])
  end
else
  limit = tonumber(redis.call('HGET', accountKey, limitField))
  balance = -1
end
if not limit then
  return { CODE.NO_ACCOUNT, 0, 0, 0, -1, credits }
end

local counted, used, resetMs = window_admit(counterPrefix, now, windowMs, limit)
if not counted then
  return { CODE.RATE_LIMITED, limit, 0, resetMs, balance, credits }
end

if credits > 0 and balance < credits then
  return { CODE.INSUFFICIENT, limit, limit - used, resetMs, balance, credits }
end
return { CODE.OK, limit, limit - used, resetMs, balance, credits }
