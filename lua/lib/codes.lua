--[[
  codes: the result codes every script returns as its first value. The build replaces each
  CODE.NAME with its number (src/scripts/compile.ts), and gives the table to TypeScript as
  src/scripts/codes.ts's Code: one list for both.
]]
--@const export
local CODE = {
  OK = 0,
  RATE_LIMITED = 1,
  INSUFFICIENT = 2,
  NO_ACCOUNT = 3,
  ACCOUNT_EXISTS = 4,
  SURFACE_NOT_ALLOWED = 5,
  HOLD_LIMIT = 6,
  IDEMPOTENCY_REUSED = 7,
  IDEMPOTENCY_IN_USE = 8,
  NO_HOLD = 9,
  HOLD_ENDED = 10,
  LEASE_EXPIRED = 11,
  REPLAYED = 12,
  TOO_MANY_ITEMS = 13,
  HOLD_EXISTS = 14,
  WRONG_HOLD_KIND = 15,
  COST_EXCEEDS_LIMIT = 16,
  UNKNOWN_SURFACE = 17,
  KEY_REFUSED = 18,
  BUDGET_EXHAUSTED = 19,
  TOO_MANY_LABELS = 20,
  BAD_SETTLEMENT = 21,
  KEY_LIMIT = 22,
  KEY_EXISTS = 23,
  HOLDS_DUE = 24,
  HOLD_DROPPED = 25,
  OPERATION_REUSED = 26,
  HOLDS_OPEN = 27,
  CONCURRENCY = 28,
  PLANS_BEHIND = 29,
  GRANT_LIMIT = 30,
  NO_GRANT = 31,
  UNKNOWN_CHARGE = 32,
  EXCEEDS_CHARGE = 33,
  BAD_GRANT = 34,
}
