/** The public API of tollgate: everything not listed here is internal. */
export { createTollgate, type Tollgate, type TollgateOptions } from "./tollgate.ts";
export { fromNodeRedis, type NodeRedisLike } from "./redis/nodeRedis.ts";
export { fromIoredis, type IoredisLike } from "./redis/ioredis.ts";
export type { RedisScriptClient } from "./redis/client.ts";
export { DEFAULT_PLANS, validatePlans, type Plan, type PlanTable } from "./plans.ts";
export { currentPeriod, periodStart, type CycleSpec, type Interval, type Period } from "./cycles.ts";
export type { Accounts, AccountSnapshot, Cycle, EndedCycle, CreateAccountOptions } from "./accounts.ts";
export { SURFACES, type Limits, type Admission, type AdmitOptions, type RateLimitState, type Surface } from "./limits.ts";
export type { Credits, ChargeRequest, ChargeOutcome, Reconciliation } from "./credits.ts";
export type { Usage } from "./usage.ts";
export { jobFromFields, type Job, type JobKind, type JobStatus } from "./jobRecord.ts";
export {
  COLLECTION_LIMIT,
  newJobId,
  type Jobs,
  type ReserveRequest,
  type CollectionRequest,
  type ReserveOutcome,
  type SettleOutcome,
  type EndOutcome,
  type TranscriptResult,
  type CommentPageResult,
} from "./jobs.ts";
export { canonicalJson, fingerprint, type Idempotency, type IdempotencyClaim, type BeginOutcome, type StoredOutcome } from "./idempotency.ts";
export {
  TollgateError,
  InvalidInputError,
  UnknownPlanError,
  AccountNotFoundError,
  AccountExistsError,
  JobNotFoundError,
  StoreUnavailableError,
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
} from "./http.ts";
