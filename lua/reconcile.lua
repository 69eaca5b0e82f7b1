--[[
  reconcile: recompute the current cycle's balance, spent and held from the journal and
  return them beside the stored ones (docs/credits.md#the-credit-invariant). A cycle without a movement yet has
  no journal entry and reconciles to its allowance. complete is 0 when the cycle's opening
  grant was trimmed from the journal, or the journal is off.
  KEYS[1] account       hash   the account (lib/account.lua)
  KEYS[2] cycles        hash   ended cycles (written on rollover)
  KEYS[3] journal       stream credit movements (lib/journal.lua)
  ARGV[1] nowMs         integer  injected time, or -1 for Redis TIME
  ARGV[2] journalTrim   string   'off' | 'maxlen' | 'minage'
  Returns: {code, complete, cycle, journalBalance, journalSpent, journalHeld,
            balance, spent, held, entries}   Codes: OK, NO_ACCOUNT
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/cycle.lua"
--@include "lib/journal.lua"

local accountKey  = KEYS[1]
local cyclesKey   = KEYS[2]
local journalKey  = KEYS[3]
local nowArg      = ARGV[1]
local journalTrim = ARGV[2]

local a = cycle_current_account({ accountKey = accountKey, cyclesKey = cyclesKey, now = clock_now(nowArg) })
if not a then
  return { CODE.NO_ACCOUNT }
end

local complete, balance, spent, held, entries = 0, 0, 0, 0, 0
for _, e in ipairs(journal_read(journalKey)) do
  if e.cycle == a.cycle then
    local n = e.amount
    entries = entries + 1
    if e.kind == 'grant' then
      complete, balance, spent, held, entries = 1, n, 0, 0, 1
    elseif e.kind == 'charge' then
      balance, spent = balance - n, spent + n
    elseif e.kind == 'reserve' then
      balance, held = balance - n, held + n
    elseif e.kind == 'spend' then
      held, spent = held - n, spent + n
    elseif e.kind == 'refund' then
      held, balance = held - n, balance + n
    end
  end
end
if complete == 0 and journalTrim ~= 'off' and a.journalGrant ~= a.cycle then
  complete, balance, spent, held = 1, a.allowance, 0, 0
end
return { CODE.OK, complete, a.cycle, balance, spent, held, a.balance, a.spent, a.held, entries }
