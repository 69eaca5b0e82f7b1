--[[
  eraseAccount: delete every key of a subject (src/accounts.ts#delete, an erasure request):
  its account and what hangs off it, and the other keys of its hash tag a scan found (hold
  hashes, Idempotency-Keys, policy counts). Refused while holds are open, unless forced.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   the ended cycles
  KEYS[3] journal       stream the credit journal
  KEYS[4] history       hash   credits per day
  KEYS[5] holdsActive   zset   the open holds
  KEYS[6] holdsEnded    zset   the ended holds kept
  KEYS[7] holdList      zset   every hold id, newest first
  KEYS[8] operations    hash   recent operation ids
  KEYS[9...] others     string every other key of the subject's hash tag, as found
  ARGV[1] force         0|1    1: delete even with holds open
  Returns: {code}   Codes: OK, HOLDS_OPEN (nothing deleted)
]]
--@include "lib/codes.lua"

if ARGV[1] ~= '1' and redis.call('ZCARD', KEYS[5]) > 0 then
  return { CODE.HOLDS_OPEN }
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8])
for i = 9, #KEYS do
  redis.call('DEL', KEYS[i])
end
return { CODE.OK }
