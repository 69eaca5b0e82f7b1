--[[
  reconcile: recompute the current cycle's balance, spent and held from the journal and
  return them beside the stored ones (SPEC §3 invariant). A cycle without a movement yet has
  no journal entry and reconciles to its allowance. complete is 0 when the cycle's opening
  grant was trimmed from the journal, or the journal is off.
  KEYS[1] account       hash   the account (fields: lua/lib/account.lua)
  KEYS[2] cycles        hash   archived cycle summaries (written on rollover)
  KEYS[3] journal       stream credit movements
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] journalTrim   string   'off' | 'maxlen' | 'minage'
  ARGV[3] journalBound  integer  max entries, or max age in ms
  Returns: {code, complete, cycle, journalBalance, journalSpent, journalHeld,
            balance, spent, held, entries}   Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"

local accountKey   = KEYS[1]
local cyclesKey    = KEYS[2]
local journalKey   = KEYS[3]
local nowArg       = ARGV[1]
local journalTrim  = ARGV[2]
local journalBound = tonumber(ARGV[3])

local ctx = { accountKey = accountKey, cyclesKey = cyclesKey, journalKey = journalKey,
  journalTrim = journalTrim, journalBound = journalBound, now = clock_now(nowArg) }

local a = account_current(ctx)
if not a then
  return { CODE.NO_ACCOUNT, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
end

local complete, bal, spent, held, entries = 0, 0, 0, 0, 0
local cycle = tostring(a.cyc)
for _, entry in ipairs(redis.call('XRANGE', journalKey, '-', '+')) do
  local f = {}
  local kv = entry[2]
  for i = 1, #kv, 2 do
    f[kv[i]] = kv[i + 1]
  end
  if f.c == cycle then
    local n = tonumber(f.n)
    entries = entries + 1
    if f.k == 'grant' then
      complete, bal, spent, held, entries = 1, n, 0, 0, 1
    elseif f.k == 'charge' then
      bal, spent = bal - n, spent + n
    elseif f.k == 'reserve' then
      bal, held = bal - n, held + n
    elseif f.k == 'spend' then
      held, spent = held - n, spent + n
    elseif f.k == 'refund' then
      held, bal = held - n, bal + n
    end
  end
end
if complete == 0 and journalTrim ~= 'off' and a.jg ~= a.cyc then
  complete, bal, spent, held = 1, a.alw, 0, 0
end
return { CODE.OK, complete, a.cyc, bal, spent, held, a.bal, a.spent, a.held, entries }
