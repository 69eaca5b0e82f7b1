/**
 * The public API of tollgate: everything not listed here is internal.
 *
 * @module tollgate
 */
export { createTollgate, type Tollgate, type TollgateOptions } from "./tollgate.ts";
export { TELEMETRY_NAMES, type TelemetryOption, type TelemetryAttributes, type TracerLike, type SpanLike, type MeterLike, type CounterLike } from "./telemetry.ts";
export { fromNodeRedis, type NodeRedisLike, type NodeRedisClientLike, type NodeRedisClusterLike } from "./redis/nodeRedis.ts";
export { fromIoredis, type IoredisLike } from "./redis/ioredis.ts";
export type { RedisScriptClient, DedicatedConnection } from "./redis/client.ts";
export { DEFAULT_PLANS, validatePlans, validatePolicies, type Plan, type PlanTable, type PolicyTable } from "./plans.ts";
export type { Window, Algorithm, SurfaceWindows, RateLimitState } from "./windows.ts";
export { currentPeriod, periodStart, type CycleSpec, type Interval, type Period } from "./cycles.ts";
export type { Accounts, AccountSnapshot, CreateAccountOptions, ChangePlanOptions } from "./accounts.ts";
export type { Limits, Admission, Allowed, Denial, AdmitOptions, LimitTarget, LimitState } from "./limits.ts";
export type { Credits as CreditsApi, ChargeRequest, ChargeOutcome, Reconciliation, DayUsage } from "./credits.ts";
export type { Holds, OpenHoldRequest, OpenBudgetRequest, OpenOutcome, RenewOutcome, Settlement, Spend, SettleOutcome, EndOutcome, IdempotencyInput } from "./holds.ts";
export { MAX_LEASE_MS } from "./holds.ts";
export type { Keys, IssueKeyOptions, IssuedKey, KeyInfo, VerifyOptions, Verification, UsageVerification, KeyRefusal } from "./apiKeys.ts";
export type { Usage } from "./usage.ts";
export type { Hold, HoldKind, HoldStatus, HoldEndReason, Cycle, EndedCycle, AccountLimits, Credits } from "./records.ts";
export { canonicalJson } from "./canonicalJson.ts";
export { fingerprint, type Idempotency, type IdempotencyClaim, type BeginOutcome, type StoredOutcome } from "./idempotency.ts";
export {
  TollgateError,
  InvalidInputError,
  UnknownPlanError,
  AccountNotFoundError,
  AccountExistsError,
  HoldNotFoundError,
  KeyLimitError,
  StoreUnavailableError,
  UnconfirmedError,
  isTollgateError,
  type TollgateErrorCode,
} from "./errors.ts";
export {
  ERROR_STATUS,
  errorBody,
  errorReply,
  insufficientReply,
  newRequestId,
  rateLimitHeaders,
  rateLimitedReply,
  replyForError,
  retryAfterSeconds,
  unavailableReply,
  type ErrorType,
  type HeaderOptions,
  type HttpReply,
  type Limited,
} from "./http.ts";
export {
  checkRequest,
  checkRateLimitOptions,
  type RateLimitOptions,
  type RateLimitPass,
  type RateLimitRefusal,
  type RateLimitDecision,
  type PerRequest,
  type StoreErrorMode,
} from "./middleware.ts";
