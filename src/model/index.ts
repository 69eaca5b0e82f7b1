/**
 * The reference model of tollgate's rules, in plain TypeScript with no Redis:
 * `tollgate/model`. It takes the same option objects and returns the same shapes as the main
 * API, so the property tests (and a host's own) run one list of operations against Redis and
 * against the model and compare the answers and accounts.inspect after every step, then check
 * the credit invariants on what Redis holds. Time comes from the clock it is given.
 *
 * @module tollgate/model
 */
export { TollgateModel, type ModelOptions, type ModelAccount, type ModelHold, type ModelKey, type ModelIdempotencyRecord } from './model.ts';
export type { ModelEvents, ModelOutbox, ModelOutboxEntry, ModelDelivery, ModelEventsDelivery } from './events.ts';
export type { Threshold, TollgateEventType, EventDataByType, EventsOptions } from '../rules/events.ts';
export { checkInvariants, checkSources, type InvariantViolation } from './invariants.ts';
/** The spend order of credit sources, the one rule the scripts keep too (docs/grants.md#spend-order). */
export { compareSources, type Orderable } from '../rules/grants.ts';
export type { ModelAccounts } from './accounts.ts';
export type { ModelLimits, KeyWindows } from './limits.ts';
export type { ModelOverride, ModelOverrideMap } from './core.ts';
export type { Override, OverrideOptions } from '../overrides.ts';
export type { ModelCredits } from './credits.ts';
export type { ModelHolds } from './holds.ts';
export type { ModelKeys } from './keys.ts';
export type { ModelIdempotency } from './idempotency.ts';
export type { ExpiringMap } from './expiring.ts';
export type { Slot, WindowCounters } from './windows.ts';
export type {
  AccountSnapshot,
  CreateAccountOptions,
  ChangePlanOptions,
  ListAccountsOptions,
  AccountPage,
  DeleteAccountOptions,
  DeleteOutcome,
} from '../accounts.ts';
export type { Admission, Allowed, Denial, AdmitOptions, LimitTarget, LimitState } from '../limits.ts';
export type { ChargeRequest, ChargeOutcome, Charged, DayUsage, Insufficient } from '../credits.ts';
export type {
  OpenHoldRequest,
  OpenBudgetRequest,
  OpenOutcome,
  SurfaceNotAllowed,
  Settlement,
  Spend,
  SettleOutcome,
  Settled,
  SettleRefusal,
  EndOutcome,
} from '../holds.ts';
export type { Usage } from '../usage.ts';
export type { Hold, HoldKind, HoldStatus, HoldEndReason, Cycle, EndedCycle, AccountLimits, AccountCredits, Credits } from '../records.ts';
export type { Plan, PlanTable, PolicyTable } from '../rules/plans.ts';
export type { Window, Algorithm, SurfaceWindows, RateLimitState, ConcurrencyWindow } from '../rules/windows.ts';
export type { Interval } from '../rules/cycles.ts';
export type { ModelGrant, ModelGrantState } from './core.ts';
export type { ModelOperation } from './core.ts';
export type {
  AdjustOutcome,
  AdjustRequest,
  CreditSource,
  Grant,
  GrantKind,
  GrantOutcome,
  GrantRequest,
  GrantStatus,
  GrantsOptions,
  ListGrantsOptions,
  RefundOutcome,
  RefundRequest,
  SourceKind,
  VoidGrantOptions,
  VoidOutcome,
} from '../rules/grants.ts';
