/** Result codes of the Lua scripts; mirrors lua/lib/codes.lua (test/scripts.test.ts checks). */
export enum Code {
  OK = 0,
  RATE_LIMITED = 1,
  INSUFFICIENT = 2,
  NO_ACCOUNT = 3,
  ACCOUNT_EXISTS = 4,
  PLAN_NOT_ALLOWED = 5,
  JOB_LIMIT = 6,
  IDEMPOTENCY_REUSED = 7,
  IDEMPOTENCY_IN_USE = 8,
  NO_JOB = 9,
  JOB_ENDED = 10,
  LEASE_EXPIRED = 11,
  REPLAYED = 13,
  TOO_MANY_VIDEOS = 14,
  JOB_EXISTS = 15,
  WRONG_JOB_KIND = 16,
}
