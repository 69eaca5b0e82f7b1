--[[
  admit: count a request of `cost` in every window of an account's surface and, when asked,
  pre-check its balance, in one round trip (docs/limits.md; body: lib/admit.lua). cost 0 only
  looks (src/limits.ts#peek).
  Layout: look        KEYS[1] account, ARGV[1] nowMs (lib/prologue.lua)
  ARGV[2] surface       string   the surface whose windows count the request
  ARGV[3] cost          integer  requests this one counts as; 0 only looks
  ARGV[4] credits       integer  balance needed for the pre-check; 0 skips it
  ARGV[5] stagger       integer  the subject's offset of fixed windows in ms; 0 for none
  ARGV[6] plansVersion  string   the caller's plan table (lib/account.lua); '' never refreshes
  Returns: {code, windows windows, balance integer?, available integer?}   windows:
    lib/windows.lua's reply (the spec, then each window's numbers); balance (the cycle's) and
    available (every active source's, docs/grants.md) only with a pre-check, available only
    where it is not the balance (an account with grants)
    Codes: OK, RATE_LIMITED, COST_EXCEEDS_LIMIT and CONCURRENCY (nothing counted), INSUFFICIENT
    (counted, credits short), NO_ACCOUNT, UNKNOWN_SURFACE, PLANS_BEHIND (nothing counted)
  Returns PLANS_BEHIND: {code, plan string}   the account's plan, whose numbers are older
]]
--@include "lib/clock.lua"
--@include "lib/admit.lua"

return admit_account(KEYS[1], clock_now(ARGV[1]), ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])
