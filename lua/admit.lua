--[[
  admit: count a request of `cost` in every window of a surface and, when asked, pre-check
  the credit balance, in one round trip (SPEC §4, §10). With a key id it first checks the API
  key (src/apiKeys.ts#verify); a key that is unknown, expired or not for this surface counts
  nothing. cost 0 only looks (src/limits.ts#peek). The hot path of every request: the account
  field of the surface (three more with a pre-check), one counter per window, no rollover: a
  cycle that has ended opens with the next allowance, so that is what the pre-check sees.
  KEYS[1] account       hash   the account (lib/account.lua); with a policy it only routes the call
  KEYS[2] apiKeys       hash   the subject's API keys (lib/apiKeys.lua); read only with a key id
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] surface       string   the surface whose windows count the request
  ARGV[3] cost          integer  requests this one counts as; 0 only looks
  ARGV[4] credits       integer  balance needed for the pre-check; 0 skips it
  ARGV[5] windows       string   a policy's windows (lib/windows.lua); '' reads the account's
  ARGV[6] counterBase   string   counters are <counterBase><surface>:<seconds>:<window>, same slot
  ARGV[7] stagger       integer  the subject's offset of fixed windows in ms; 0 for none
  ARGV[8] keyId         string   the presented key's id, '' without a key
  ARGV[9] keyDigest     string   the presented key's digest
  Returns: {code, balance, then per window: limit, remaining, resetMs, retryMs, seconds, sliding}
    balance is -1 without a pre-check. KEY_REFUSED: {code, reason}.
    Codes: OK, RATE_LIMITED and COST_EXCEEDS_LIMIT (nothing counted), INSUFFICIENT (counted,
    credits short), KEY_REFUSED, NO_ACCOUNT, UNKNOWN_SURFACE
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"
--@include "lib/apiKeys.lua"
--@include "lib/windows.lua"

local accountKey  = KEYS[1]
local apiKeysKey  = KEYS[2]
local nowArg      = ARGV[1]
local surface     = ARGV[2]
local cost        = tonumber(ARGV[3])
local credits     = tonumber(ARGV[4])
local windows     = ARGV[5]
local counterBase = ARGV[6]
local stagger     = tonumber(ARGV[7])
local keyId       = ARGV[8]
local keyDigest   = ARGV[9]

local now = clock_now(nowArg)
if keyId ~= '' then
  local refusal = key_refusal(apiKeysKey, keyId, keyDigest, surface, now)
  if refusal then
    return { CODE.KEY_REFUSED, refusal }
  end
end

local balance = -1
if windows == '' then
  local field = ACCOUNT_PREFIX.windows .. surface
  if credits > 0 then
    local v = redis.call('HMGET', accountKey, field, ACCOUNT.balance, ACCOUNT.cycleEnd, ACCOUNT.nextAllowance)
    windows = v[1]
    if windows then
      balance = tonumber(v[2])
      if now >= tonumber(v[3]) then
        balance = tonumber(v[4])
      end
    end
  else
    windows = redis.call('HGET', accountKey, field)
  end
  if not windows then
    if redis.call('EXISTS', accountKey) == 0 then
      return { CODE.NO_ACCOUNT }
    end
    return { CODE.UNKNOWN_SURFACE }
  end
end

local reply = { CODE.OK, balance }
local code = windows_admit(reply, windows, counterBase .. surface .. ':', now, cost, stagger)
if code == CODE.OK and credits > 0 and balance < credits then
  code = CODE.INSUFFICIENT
end
reply[1] = code
return reply
