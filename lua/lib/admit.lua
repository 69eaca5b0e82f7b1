--[[
  admit: count a request on an account's windows and pre-check its balance, the body shared by
  lua/admit.lua and lua/verifyKey.lua. The hot path of every request: one read of the
  account hash (the surface's windows; with a pre-check the balance and the cycle's end; with
  a key its record) and one counter per window. No rollover: a cycle that has ended opens with
  the next allowance, so that is the balance the pre-check sees then.
  Reply: lib/windows.lua's, with the balance appended when a pre-check was asked; or
  {KEY_REFUSED, reason}, {NO_ACCOUNT}, {UNKNOWN_SURFACE}. INSUFFICIENT replaces OK when the
  request was counted but the balance is short.
]]
--@include "codes.lua"
--@include "account.lua"
--@include "apiKeys.lua"
--@include "windows.lua"

-- costArg, creditsArg and staggerArg are the texts the caller sent: the common values ('1',
-- '0', '0') are read without a text-to-number step. keyId is nil without a key.
local function admit_account(accountKey, now, surface, costArg, creditsArg, staggerArg, keyId, keyDigest)
  local cost = costArg == '1' and 1 or tonumber(costArg)
  local credits = creditsArg == '0' and 0 or tonumber(creditsArg)
  local stagger = staggerArg == '0' and 0 or tonumber(staggerArg)
  local field = ACCOUNT_PREFIX.windows .. surface
  -- One read of the account: the windows, then the balance and cycle end of a pre-check, then
  -- the key's record.
  local spec, balance, record = nil, -1, nil
  if credits > 0 then
    local v
    if keyId then
      v = redis.call('HMGET', accountKey, field, ACCOUNT.balance, ACCOUNT.cycleEnd, KEY_FIELD.record .. keyId)
      record = v[4]
    else
      v = redis.call('HMGET', accountKey, field, ACCOUNT.balance, ACCOUNT.cycleEnd)
    end
    spec = v[1]
    if spec then
      balance = tonumber(v[2])
      if now >= tonumber(v[3]) then
        balance = tonumber(redis.call('HGET', accountKey, ACCOUNT.nextAllowance))
      end
    end
  elseif keyId then
    local v = redis.call('HMGET', accountKey, field, KEY_FIELD.record .. keyId)
    spec, record = v[1], v[2]
  else
    spec = redis.call('HGET', accountKey, field)
  end
  if keyId then
    local refusal = key_refusal(accountKey, keyId, record, keyDigest, surface, now)
    if refusal then
      return { CODE.KEY_REFUSED, refusal }
    end
  end
  if not spec then
    if redis.call('EXISTS', accountKey) == 0 then
      return { CODE.NO_ACCOUNT }
    end
    return { CODE.UNKNOWN_SURFACE }
  end
  local reply = windows_count(spec, account_counters(accountKey, surface), now, cost, costArg, stagger)
  if credits > 0 then
    reply[#reply + 1] = balance
    if reply[1] == CODE.OK and balance < credits then
      reply[1] = CODE.INSUFFICIENT
    end
  end
  return reply
end
