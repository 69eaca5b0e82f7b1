/**
 * The reference model of tollgate's rules in plain TypeScript with no Redis: one object per
 * concept (accounts, limits, credits, holds, keys, idempotency, usage), each in its own file,
 * on one shared core (core.ts). It takes the same option objects and returns the same shapes
 * as the main API, synchronously, so a host drives both with one list of operations and
 * compares the answers and the accounts (accounts.inspect) after every step; the memory
 * tollgate (createTollgate with `memory: true`) is this model behind the async API. It reads
 * time from the clock it is given, never from the system. Input is checked by the same
 * functions the library uses, so bad input throws the same typed errors.
 */
import type { PlanTable, PolicyTable } from '../rules/plans.ts';
import type { Usage } from '../rules/usage.ts';
import { subjectId } from '../rules/validate.ts';
import { ModelAccounts } from './accounts.ts';
import { ModelCore, type ModelAccount, type ModelOptions } from './core.ts';
import { ModelCredits } from './credits.ts';
import { ModelHolds } from './holds.ts';
import { ModelIdempotency } from './idempotency.ts';
import { ModelKeys } from './keys.ts';
import { ModelLimits } from './limits.ts';
import { usageOf } from './usage.ts';
import { ModelEventsDelivery } from './events.ts';
import type { WindowCounters } from './windows.ts';

/** The reference model: the calls of createTollgate's concepts, with the same options and answers, in memory. */
export class TollgateModel {
  /** The validated plan table. */
  readonly plans: PlanTable;
  /** The validated policy table. */
  readonly policies: PolicyTable;
  /** Every account by subject. */
  readonly state: Map<string, ModelAccount>;
  /** Window counters; expired windows are dropped as new ones are counted. */
  readonly counters: WindowCounters;
  /** As tollgate.accounts: create, startCycle, changePlan, limits, endedCycles, inspect. */
  readonly accounts: ModelAccounts;
  /** As tollgate.limits: admit, peek, reset. */
  readonly limits: ModelLimits;
  /** As tollgate.credits: charge, reconcile, history. */
  readonly credits: ModelCredits;
  /** As tollgate.holds: open, openBudget, settle, spend, finish, cancel, get, list, sweep, sweepSubject. */
  readonly holds: ModelHolds;
  /** As tollgate.keys: issue, parse, revoke, list, verify. */
  readonly keys: ModelKeys;
  /** As tollgate.idempotency: begin, renew, release. */
  readonly idempotency: ModelIdempotency;
  /** Each subject's outbox and its delivery per consumer group (the memory tollgate's events.consume). */
  readonly events: ModelEventsDelivery;
  /** Events dropped because their outbox was full. */
  get eventsDropped(): number {
    return this.core.eventsDropped;
  }
  /** The joined groups, with their dead letters by event id. */
  get eventGroups(): Map<string, Map<string, unknown>> {
    return this.core.eventGroups;
  }
  /** Each subject's outbox (model/events.ts). */
  get outboxes() {
    return this.core.outboxes;
  }
  private readonly core: ModelCore;

  constructor(options: ModelOptions) {
    const core = new ModelCore(options);
    this.core = core;
    this.plans = core.plans;
    this.policies = core.policies;
    this.state = core.state;
    this.counters = core.counters;
    this.accounts = new ModelAccounts(core);
    this.limits = new ModelLimits(core);
    this.credits = new ModelCredits(core);
    this.holds = new ModelHolds(core);
    this.keys = new ModelKeys(core, this.limits);
    this.idempotency = new ModelIdempotency(core);
    // Redeliveries wait real time, as Redis's idle times do: they are about processes, not accounts.
    this.events = new ModelEventsDelivery(core.outboxes, core.eventGroups, Date.now);
  }

  /** As tollgate.usage: rolls over and ends lapsed holds first, counts nothing. */
  usage(subject: string, options: { surface?: string } = {}): Usage {
    const id = subjectId(subject);
    return usageOf(this.core, id, this.core.accountSurface(options.surface ?? 'api'));
  }
}

export type { ModelAccount, ModelHold, ModelKey, ModelIdempotencyRecord, ModelOptions } from './core.ts';
