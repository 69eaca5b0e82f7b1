--[[
  createAccount: open an account on a plan with its first billing cycle (docs/concepts.md#plans, docs/accounts.md#billing-cycles).
  Refused over an account that exists, and over the surviving records of one that is gone
  (its journal, ended cycles or holds: a server that evicted the account hash), so that a lost
  account is never funded again from scratch (docs/eviction.md).
  Layout: look        KEYS[1] account, ARGV[1] nowMs (lib/prologue.lua)
  KEYS[2] cycles        hash   ended cycles (read only: must be absent)
  KEYS[3] journal       stream credit movements (read only: must be absent)
  KEYS[4] holdsActive   zset   open hold ids (read only: must be absent)
  KEYS[5] holdsEnded    zset   ended hold ids kept (read only: must be absent)
  KEYS[6] holdList      zset   every hold id (read only: must be absent)
  ARGV[2] plan          string   plan name
  ARGV[3] allowance     integer  credits per cycle (the plan's credits.allowance)
  ARGV[4] holdsCap      integer  open holds allowed at once
  ARGV[5] holdsMaxItems integer  items per hold
  ARGV[6] holdsSurfaces string   surfaces holds may use, comma-separated
  ARGV[7] windows       string   'surface=spec;...' (src/rules/plans.ts, lib/windows.lua)
  ARGV[8] anchorMs      integer  cycle anchor (signup or subscription start), -1 for now
  ARGV[9] unit          'd'|'m'  interval unit: days or calendar months
  ARGV[10] length       integer  interval length in units
  ARGV[11] plansVersion string   the plan table's version (lib/account.lua)
  KEYS[7] outbox        stream the subject's events (read only: its length, lib/events.lua)
  ARGV[12] events       string   the plan's thresholds ('b<n>,u<p>,...'), or 'none': no events (src/rules/events.ts)
  Returns: {code, cycle integer, cycleStartMs integer, cycleEndMs integer, found string}   Codes: OK, ACCOUNT_EXISTS
    found: on ACCOUNT_EXISTS, what exists: 'account', 'journal', 'cycles' or 'holds'; '' on OK
]]
--@include "lib/codes.lua"
--@include "lib/clock.lua"
--@include "lib/account.lua"
--@include "lib/calendar.lua"
--@include "lib/events.lua"

local accountKey    = KEYS[1]
local cyclesKey     = KEYS[2]
local journalKey    = KEYS[3]
local holdsActiveKey = KEYS[4]
local holdsEndedKey = KEYS[5]
local holdListKey   = KEYS[6]
local nowArg        = ARGV[1]
local plan          = ARGV[2]
local allowance     = tonumber(ARGV[3])
local holdsCap      = tonumber(ARGV[4])
local holdsMaxItems = tonumber(ARGV[5])
local holdsSurfaces = ARGV[6]
local windows       = ARGV[7]
local anchorMs      = tonumber(ARGV[8])
local unit          = ARGV[9]
local length        = tonumber(ARGV[10])
local plansVersion  = ARGV[11]
local events        = ARGV[12]

if redis.call('EXISTS', accountKey) == 1 then
  return { CODE.ACCOUNT_EXISTS, 0, 0, 0, 'account' }
end
if redis.call('EXISTS', journalKey) == 1 then
  return { CODE.ACCOUNT_EXISTS, 0, 0, 0, 'journal' }
end
if redis.call('EXISTS', cyclesKey) == 1 then
  return { CODE.ACCOUNT_EXISTS, 0, 0, 0, 'cycles' }
end
if redis.call('EXISTS', holdsActiveKey, holdsEndedKey, holdListKey) > 0 then
  return { CODE.ACCOUNT_EXISTS, 0, 0, 0, 'holds' }
end

local now = clock_now(nowArg)
if anchorMs < 0 then
  anchorMs = now
end
local _, startMs, endMs = current_period(anchorMs, unit, length, now)

-- Fields are stored in the order the hot scripts look them up (a small hash is a list that
-- Redis walks from the front): windows first, then the extras and the credits, the rest last.
-- The journal starts with the cycle's first movement (lib/journal.lua).
local a = { allowance = allowance, balance = allowance, spent = 0, held = 0, cycle = 1, extras = '',
  cycleStart = startMs, cycleEnd = endMs, anchor = anchorMs, interval = unit .. length, 
  plan = plan, nextAllowance = allowance, holdsCap = holdsCap, holdsMaxItems = holdsMaxItems,
  holdsSurfaces = holdsSurfaces, plansVersion = plansVersion }
account_write_windows(accountKey, a, windows)
account_write(accountKey, a, { 'plansVersion', 'extras', 'balance', 'spent', 'cycleEnd', 'cycle', 'held', 'allowance',
  'nextAllowance', 'cycleStart', 'holdsCap', 'holdsMaxItems', 'holdsSurfaces', 'plan', 'anchor', 'interval' })
if events ~= 'none' then
  events_configure({ accountKey = accountKey, outboxKey = KEYS[7] }, a, 'p', events)
end
return { CODE.OK, 1, startMs, endMs, '' }
