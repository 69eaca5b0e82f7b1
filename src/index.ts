/**
 * The public API of tollgate: everything not listed here is internal. The error classes are
 * also in `tollgate/errors`, the HTTP helpers in `tollgate/http`, the middlewares in
 * `tollgate/express`, `tollgate/koa`, `tollgate/fastify` and `tollgate/hono`, the reference
 * model in `tollgate/model`.
 *
 * @module tollgate
 */
export { createTollgate, type Tollgate, type TollgateOptions } from './tollgate.ts';
export type { TelemetryOption, TelemetryAttributes, TracerLike, SpanLike, MeterLike, CounterLike } from './telemetry.ts';
export { fromNodeRedis, type NodeRedisLike, type NodeRedisClientLike, type NodeRedisClusterLike } from './redis/nodeRedis.ts';
export { fromIoredis, type IoredisLike } from './redis/ioredis.ts';
export type { RedisScriptClient, DedicatedConnection } from './redis/client.ts';
export type { Plan, PlanTable, PolicyTable } from './rules/plans.ts';
export type { Window, Algorithm, SurfaceWindows, RateLimitState, ConcurrencyWindow } from './rules/windows.ts';
export type { CycleSpec, Interval } from './rules/cycles.ts';
export type {
  Accounts,
  AccountSnapshot,
  CreateAccountOptions,
  ChangePlanOptions,
  ListAccountsOptions,
  AccountPage,
  DeleteAccountOptions,
  DeleteOutcome,
} from './accounts.ts';
export type { Limits, Admission, Allowed, Denial, AdmitOptions, LimitTarget, LimitState } from './limits.ts';
export type { Override, OverrideOptions } from './overrides.ts';
export type { Credits as CreditsApi, ChargeRequest, ChargeOutcome, Insufficient, Reconciliation, DayUsage } from './credits.ts';
export type { Events, ConsumeOptions, DeadLetter, DeliveredEvent, EventStats, Threshold, TollgateEvent, TollgateEventType } from './events/events.ts';
export type { EventDataByType, EventsOptions, PlanEvents, ThresholdData } from './rules/events.ts';
export type {
  Holds,
  OpenHoldRequest,
  OpenBudgetRequest,
  OpenOutcome,
  RenewOutcome,
  SurfaceNotAllowed,
  Settlement,
  Spend,
  SettleOutcome,
  Settled,
  SettleRefusal,
  EndOutcome,
  IdempotencyInput,
} from './holds.ts';
export type {
  Keys,
  IssueKeyOptions,
  IssuedKey,
  KeyInfo,
  VerifyOptions,
  Verification,
  UsageVerification,
  KeyRefusal,
  KeyRefused,
  KeyAccepted,
} from './apiKeys.ts';
export type { Usage } from './usage.ts';
export type { Hold, HoldKind, HoldStatus, HoldEndReason, Cycle, EndedCycle, AccountLimits, AccountCredits, Credits } from './records.ts';
export type { Idempotency, IdempotencyClaim, BeginOutcome, StoredOutcome } from './idempotency.ts';
export { TollgateError, isTollgateError, type TollgateErrorCode } from './errors.ts';
