--[[
  listHolds: an account's holds, newest first, after ending its lapsed holds. Spends no credit.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   ended cycles
  KEYS[3] journal       stream credit movements (lib/journal.lua)
  KEYS[4] history       hash   credits per day (lib/history.lua)
  KEYS[5] holdsActive   zset   open hold ids scored by lease expiry (ms)
  KEYS[6] holdList      zset   every hold id scored by creation time (ms)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] offset        integer  holds to skip
  ARGV[3] count         integer  at most this many
  ARGV[4] holdPrefix    string   hold hashes are <prefix><holdId> (same slot)
  ARGV[5] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[6] journalBound  integer  max entries, or max age in ms
  ARGV[7] historyDays   integer  days of history kept; 0 keeps none
  Returns: {code, total integer, active integer, ...holds hold}   holds: lib/holds.lua's reply form
    Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/holds.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local historyKey   = KEYS[4]
local holdsActiveKey = KEYS[5]
local holdListKey  = KEYS[6]
local nowArg       = ARGV[1]
local offset       = tonumber(ARGV[2])
local count        = tonumber(ARGV[3])
local holdPrefix   = ARGV[4]
local journalTrim  = ARGV[5]
local journalBound = ARGV[6]
local historyDays  = tonumber(ARGV[7])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  historyKey = historyKey, holdsActiveKey = holdsActiveKey, holdPrefix = holdPrefix, journalTrim = journalTrim,
  journalBound = journalBound, historyDays = historyDays, now = clock_now(nowArg) }

local a = holds_credits(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0 }
end
holds_expire_lapsed(ctx, a)
local reply = { CODE.OK, redis.call('ZCARD', holdListKey), redis.call('ZCARD', holdsActiveKey) }
if count > 0 then
  for _, id in ipairs(redis.call('ZREVRANGE', holdListKey, offset, offset + count - 1)) do
    local h = hold_load(holdPrefix .. id, holdPrefix)
    if h then
      reply[#reply + 1] = hold_reply(h)
    end
  end
end
return reply
