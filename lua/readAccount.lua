--[[
  readAccount: the account's stored attributes as they are (no rollover): its plan's numbers
  for src/accounts.ts#limits, one cheap read.
  KEYS[1] account       hash   the account (lib/account.lua)
  Returns: {code, account json}   account: its attributes   Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/account.lua"

local accountKey = KEYS[1]

local a = account_load(accountKey)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
a.counters = nil
return { CODE.OK, cjson.encode(a) }
