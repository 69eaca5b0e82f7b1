--[[
  listOverrides: a subject's overrides (src/limits.ts#overrides) on its account's surfaces and
  on the policy counts it is given, those that have not ended.
  KEYS[1] account       hash   the account (lib/account.lua), which may not exist
  KEYS[2...] policyCounters string the subject's counts on each policy and surface asked about
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  Returns: {code, ...overrides {at integer, surface string, windows string, expiresAt integer}}
    at: 0 for the account, i for KEYS[i + 1]; surface: the account's surface ('' for a policy);
    windows: the spec (lib/windows.lua); expiresAt: 0 for no end
    Codes: OK
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"

local now = clock_now(ARGV[1])
local reply = { CODE.OK }

-- The override word of a state, when it has one that has not ended.
local function add(at, surface, state)
  local spec, expires = string.match(state or '', '^o=(%S+)@(%d+)')
  if spec and (expires == '0' or now < tonumber(expires)) then
    local n = #reply
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4] = at, surface, (string.gsub(spec, ',', ' ')), tonumber(expires)
  end
end

local prefix = ACCOUNT_PREFIX.counters
local flat = redis.call('HGETALL', KEYS[1])
for i = 1, #flat, 2 do
  if string.sub(flat[i], 1, #prefix) == prefix then
    add(0, string.sub(flat[i], #prefix + 1), flat[i + 1])
  end
end
for i = 2, #KEYS do
  add(i - 1, '', redis.call('GET', KEYS[i]))
end
return reply
