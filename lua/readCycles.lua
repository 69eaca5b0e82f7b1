--[[
  readCycles: the summaries of an account's ended cycles, as archived on rollover and
  updated while their jobs settle (SPEC §3, §6). Read only.
  KEYS[1] cycles        hash   archived cycle summaries ("<cycle>:<field>")
  Returns: {code, field1, value1, field2, value2, ...}   Codes: OK
]]
--@include "lib/codes.lua"

local cyclesKey = KEYS[1]

local reply = { CODE.OK }
for _, v in ipairs(redis.call('HGETALL', cyclesKey)) do
  reply[#reply + 1] = v
end
return reply
