--[[
  admit: count a request on an account's windows and pre-check its balance, the body shared by
  lua/admit.lua and lua/verifyKey.lua. The hot path of every request: one read of the
  account hash (the surface's windows and their counts; with a pre-check the balance and the
  cycle's end, and the grants' sum and next roll; with a key its record) and, when the request
  is counted, one write of the counts to the same hash. No rollover: a cycle that has ended
  opens with the next allowance, so that is the balance the pre-check sees then; a grants'
  roll that is due is worked out read only (docs/grants.md: the pre-check compares available).
  Reply: lib/windows.lua's, with the balance and the credits available appended when a
  pre-check was asked; or
  {KEY_REFUSED, reason}, {NO_ACCOUNT}, {UNKNOWN_SURFACE}. INSUFFICIENT replaces OK when the
  request was counted but the balance is short.
]]
--@include "codes.lua"
--@include "account.lua"
--@include "apiKeys.lua"
--@include "windows.lua"
--@include "grants.lua"

-- The account's windows and the key's own windows on the surface (keySpec, its counts in
-- keyCountsField), counted in both or in neither (docs/limits.md, "Per-key limits"). The reply
-- joins both: spec '<account spec> | <key spec>', then every window's numbers in long form.
--@rare
local function admit_with_key(accountKey, countsField, spec, counts, keyCountsField, keySpec, keyCounts, now, cost, stagger)
  local reply, state = windows_count(spec, counts, now, cost, stagger)
  local keyReply, keyState = windows_count(keySpec, keyCounts, now, cost, 0)
  local code = reply[1] ~= CODE.OK and reply[1] or keyReply[1]
  if code ~= CODE.OK then
    -- Counted in neither: a part that would have taken shows its numbers as they stand.
    if reply[1] == CODE.OK then
      reply = windows_count(spec, counts, now, 0, stagger)
    end
    if keyReply[1] == CODE.OK then
      keyReply = windows_count(keySpec, keyCounts, now, 0, 0)
    end
  elseif state then
    redis.call('HSET', accountKey, countsField, state, keyCountsField, keyState)
  end
  local joined = { code, reply[2] .. ' | ' .. keyReply[2] }
  windows_long_form(reply, joined)
  windows_long_form(keyReply, joined)
  return joined
end

-- costArg, creditsArg and staggerArg are the texts the caller sent: the common values ('1',
-- '0', '0') are read without a text-to-number step. keyId is nil without a key.
local function admit_account(accountKey, now, surface, costArg, creditsArg, staggerArg, plansVersion, keyId, keyDigest)
  local cost = costArg == '1' and 1 or tonumber(costArg)
  local credits = creditsArg == '0' and 0 or tonumber(creditsArg)
  local stagger = staggerArg == '0' and 0 or tonumber(staggerArg)
  local field, countsField = ACCOUNT_PREFIX.windows .. surface, ACCOUNT_PREFIX.counters .. surface
  -- One read of the account: the windows and their counts, then the balance and cycle end of
  -- a pre-check, then the key's record.
  local spec, counts, balance, available, record, version = nil, nil, -1, -1, nil, nil
  if credits > 0 then
    local v
    if keyId then
      v = redis.call('HMGET', accountKey, field, countsField, ACCOUNT.plansVersion, ACCOUNT.balance, ACCOUNT.cycleEnd,
        ACCOUNT.extras, KEY_FIELD.record .. keyId)
      record = v[7]
    else
      v = redis.call('HMGET', accountKey, field, countsField, ACCOUNT.plansVersion, ACCOUNT.balance, ACCOUNT.cycleEnd,
        ACCOUNT.extras)
    end
    spec, counts, version = v[1], v[2], v[3]
    if spec then
      balance = tonumber(v[4])
      if now >= tonumber(v[5]) then
        balance = tonumber(redis.call('HGET', accountKey, ACCOUNT.nextAllowance))
      end
      available = balance
      local grantSum, nextRoll = account_extras_grants(v[6])
      if grantSum then
        available = balance + ((nextRoll >= 0 and now >= nextRoll) and grants_available_at(accountKey, now) or grantSum)
      end
    end
  elseif keyId then
    local v = redis.call('HMGET', accountKey, field, countsField, ACCOUNT.plansVersion, KEY_FIELD.record .. keyId)
    spec, counts, version, record = v[1], v[2], v[3], v[4]
  else
    local v = redis.call('HMGET', accountKey, field, countsField, ACCOUNT.plansVersion)
    spec, counts, version = v[1], v[2], v[3]
  end
  if keyId then
    local refusal = key_refusal(accountKey, keyId, record, keyDigest, surface, now)
    if refusal then
      return { CODE.KEY_REFUSED, refusal }
    end
  end
  -- Numbers from an older plan table: the caller refreshes them and asks again.
  if version ~= plansVersion and (spec or redis.call('EXISTS', accountKey) == 1) and account_behind(version or nil, plansVersion) then
    return { CODE.PLANS_BEHIND, redis.call('HGET', accountKey, ACCOUNT.plan) }
  end
  if not spec then
    if redis.call('EXISTS', accountKey) == 0 then
      return { CODE.NO_ACCOUNT }
    end
    return { CODE.UNKNOWN_SURFACE }
  end
  local reply, state
  local keySpec = nil
  if keyId and string.byte(record, -1) == 76 then
    -- 'L': the key has its own windows; those of this surface, if any, count too.
    local keyField = KEY_FIELD.record .. keyId
    local v = redis.call('HMGET', accountKey, keyField .. KEY_FIELD.limits, keyField .. KEY_FIELD.counts .. surface)
    local text = ';' .. (v[1] or '')
    local at = string.find(text, ';' .. surface .. '=', 1, true)
    keySpec = at and string.match(text, '^[^;]+', at + #surface + 2)
    if keySpec then
      reply = admit_with_key(accountKey, countsField, spec, counts or nil, keyField .. KEY_FIELD.counts .. surface, (string.gsub(keySpec, ',', ' ')), v[2] or nil, now, cost, stagger)
    end
  end
  if not keySpec then
    reply, state = windows_count(spec, counts or nil, now, cost, stagger)
    if state then
      redis.call('HSET', accountKey, countsField, state)
    end
  end
  if credits > 0 then
    reply[#reply + 1] = balance
    if available ~= balance then
      reply[#reply + 1] = available
    end
    if reply[1] == CODE.OK and available < credits then
      reply[1] = CODE.INSUFFICIENT
    end
  end
  return reply
end
