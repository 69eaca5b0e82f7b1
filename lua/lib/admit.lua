--[[
  admit: count a request on an account's windows and pre-check its balance, the body shared by
  lua/admit.lua and lua/verifyKey.lua. The hot path of every request: one read of the
  account hash (the surface's windows and their counts; with a pre-check the balance and the
  cycle's end; with a key its record) and, when the request is counted, one write of the
  counts to the same hash. No rollover: a cycle that has ended opens with the next allowance,
  so that is the balance the pre-check sees then.
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
  local field, countsField = ACCOUNT_PREFIX.windows .. surface, ACCOUNT_PREFIX.counters .. surface
  -- One read of the account: the windows and their counts, then the balance and cycle end of
  -- a pre-check, then the key's record.
  local spec, counts, balance, record = nil, nil, -1, nil
  if credits > 0 then
    local v
    if keyId then
      v = redis.call('HMGET', accountKey, field, countsField, ACCOUNT.balance, ACCOUNT.cycleEnd, KEY_FIELD.record .. keyId)
      record = v[5]
    else
      v = redis.call('HMGET', accountKey, field, countsField, ACCOUNT.balance, ACCOUNT.cycleEnd)
    end
    spec, counts = v[1], v[2]
    if spec then
      balance = tonumber(v[3])
      if now >= tonumber(v[4]) then
        balance = tonumber(redis.call('HGET', accountKey, ACCOUNT.nextAllowance))
      end
    end
  elseif keyId then
    local v = redis.call('HMGET', accountKey, field, countsField, KEY_FIELD.record .. keyId)
    spec, counts, record = v[1], v[2], v[3]
  else
    local v = redis.call('HMGET', accountKey, field, countsField)
    spec, counts = v[1], v[2]
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
  local reply, state = windows_count(spec, counts or nil, now, cost, stagger)
  if state then
    redis.call('HSET', accountKey, countsField, state)
  end
  if credits > 0 then
    reply[#reply + 1] = balance
    if reply[1] == CODE.OK and balance < credits then
      reply[1] = CODE.INSUFFICIENT
    end
  end
  return reply
end
