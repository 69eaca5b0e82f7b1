--[[
  verifyKey: check a presented API key and admit its subject, with the credit pre-check, in
  one round trip (src/apiKeys.ts#verify; body: lib/admit.lua). A key that is unknown, expired
  or not for this surface counts nothing.
  Layout: look        KEYS[1] account, ARGV[1] nowMs (lib/prologue.lua)
  ARGV[2] surface       string   the surface whose windows count the request
  ARGV[3] cost          integer  requests this one counts as
  ARGV[4] credits       integer  balance needed for the pre-check; 0 skips it
  ARGV[5] stagger       integer  the subject's offset of fixed windows in ms; 0 for none
  ARGV[6] plansVersion  string   the caller's plan table (lib/account.lua); '' never refreshes
  ARGV[7] keyId         string   the presented key's id
  ARGV[8] keyDigest     string   the presented key's digest
  Returns KEY_REFUSED: {code, reason 'unknown'|'expired'|'surface_not_allowed'}
  Returns PLANS_BEHIND: {code, plan string}   as lua/admit.lua
  Returns: {code, windows windows, balance integer?, available integer?}   as lua/admit.lua
    Codes: those of admit, KEY_REFUSED
]]
--@include "lib/clock.lua"
--@include "lib/admit.lua"

return admit_account(KEYS[1], clock_now(ARGV[1]), ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8])
