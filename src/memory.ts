/**
 * The tollgate in this process's memory (createTollgate with `memory: true`): the reference
 * model (src/model/) behind the same async API as the tollgate on Redis, with the same
 * outcomes, the same typed errors and the same checks before anything is touched. For tests
 * and one-process apps: several processes share nothing, and nothing survives a restart
 * (docs/memory.md).
 */
import type {
  AccountPage,
  Accounts,
  AccountSnapshot,
  ChangePlanOptions,
  CreateAccountOptions,
  DeleteAccountOptions,
  DeleteOutcome,
  ListAccountsOptions,
} from './accounts.ts';
import type { Keys } from './apiKeys.ts';
import type { IssueKeyOptions, IssuedKey, KeyInfo, UsageVerification, Verification, VerifyOptions } from './rules/keys.ts';
import type { Credits } from './credits.ts';
import type { ChargeOutcome, ChargeRequest, DayUsage, Reconciliation } from './rules/credits.ts';
import type { Interval } from './rules/cycles.ts';
import type { Holds } from './holds.ts';
import type { EndOutcome, OpenBudgetRequest, OpenHoldRequest, OpenOutcome, RenewOutcome, SettleOutcome, Settlement, Spend } from './rules/holds.ts';
import type { Idempotency } from './idempotency.ts';
import type { BeginOutcome, IdempotencyClaim } from './rules/idempotency.ts';
import type { Limits } from './limits.ts';
import type { Admission, AdmitOptions, Denial, LimitState, LimitTarget } from './rules/limits.ts';
import type { Override, OverrideOptions } from './overrides.ts';
import { TollgateModel } from './model/model.ts';
import type { ModelOptions } from './model/core.ts';
import type { AccountLimits, Cycle, EndedCycle, Hold } from './rules/records.ts';
import type { Usage } from './rules/usage.ts';
import { validatePlans, validatePolicies } from './rules/plans.ts';
import { count } from './rules/validate.ts';
import { checkedTable, type SurfaceWindows, type Window } from './rules/windows.ts';
import type { Events } from './events/events.ts';
import {
  consumeArgs,
  groupName,
  type ConsumeOptions,
  type DeadLetter,
  type DeliveredEvent,
  type EventStats,
  type Threshold,
  type TollgateEvent,
} from './rules/events.ts';
import { InvalidInputError } from './errors.ts';

/** What a memory tollgate is made from: the options that change the rules, and a clock. */
export type MemoryOptions = Omit<ModelOptions, 'clock'> & { clock?: () => number };

/** What each concept offers a caller: its public members (the classes on Redis also hold their context). */
type Face<T> = { [K in keyof T]: T[K] };

/**
 * The concept's class type, for an object that has each of its public members. The classes
 * on Redis also carry their context, a private member no caller can reach: the `implements`
 * clauses below check every member a caller can.
 */
function as<T>(face: Face<T>): T {
  return face as T;
}

/**
 * Makes a tollgate in memory: the options are checked here, as createTollgate checks them.
 * createTollgate gives it the Tollgate type, which checks it has every member.
 */
export function createMemoryTollgate(options: MemoryOptions) {
  const clock = options.clock ?? Date.now;
  const model = new TollgateModel({ ...options, clock });
  return {
    accounts: as<Accounts>(new MemoryAccounts(model)),
    limits: as<Limits>(new MemoryLimits(model)),
    credits: as<Credits>(new MemoryCredits(model)),
    holds: as<Holds>(new MemoryHolds(model)),
    keys: as<Keys>(new MemoryKeys(model)),
    idempotency: as<Idempotency>(new MemoryIdempotency(model)),
    events: as<Events>(new MemoryEvents(model, clock)),
    usage: async (subject: string, usageOptions?: { surface?: string }): Promise<Usage> => model.usage(subject, usageOptions),
    plans: model.plans,
    policies: model.policies,
    close: async (): Promise<void> => {},
  };
}

/**
 * A limiter in this process's memory from the same plans and policies, each window's limit
 * divided by `instances` (at least 1 request each): the share of one of `instances` app
 * servers, to limit on while the shared store is out of reach.
 */
export function createLocalLimiter(options: MemoryOptions & { instances: number }): ReturnType<typeof createMemoryTollgate> {
  const { instances, ...rest } = options;
  count('instances', instances, 1);
  const share = (windows: readonly Window[]): Window[] => windows.map((w) => ({ ...w, limit: Math.max(1, Math.floor(w.limit / instances)) }));
  const shared = (table: SurfaceWindows) => Object.fromEntries(Object.entries(checkedTable(table)).map(([surface, windows]) => [surface, share(windows)]));
  const plans = validatePlans(rest.plans);
  const policies = validatePolicies(rest.policies);
  return createMemoryTollgate({
    ...rest,
    plans: Object.fromEntries(Object.entries(plans).map(([name, plan]) => [name, { ...plan, limits: shared(plan.limits) }])),
    // A table with no policy is refused: none is given then.
    ...(Object.keys(policies).length > 0 && { policies: Object.fromEntries(Object.entries(policies).map(([name, policy]) => [name, shared(policy)])) }),
  });
}

class MemoryAccounts implements Face<Accounts> {
  constructor(private readonly model: TollgateModel) {}
  async create(subject: string, options: CreateAccountOptions): Promise<{ subject: string; plan: string; cycle: Cycle }> {
    return this.model.accounts.create(subject, options);
  }
  async startCycle(subject: string, options?: { every?: Interval }): Promise<Cycle> {
    return this.model.accounts.startCycle(subject, options);
  }
  async changePlan(subject: string, planName: string, options?: ChangePlanOptions): Promise<Cycle> {
    return this.model.accounts.changePlan(subject, planName, options);
  }
  async limits(subject: string): Promise<AccountLimits> {
    return this.model.accounts.limits(subject);
  }
  async endedCycles(subject: string): Promise<EndedCycle[]> {
    return this.model.accounts.endedCycles(subject);
  }
  async inspect(subject: string): Promise<AccountSnapshot> {
    return this.model.accounts.inspect(subject);
  }
  async list(options?: ListAccountsOptions): Promise<AccountPage> {
    return this.model.accounts.list(options);
  }
  async delete(subject: string, options?: DeleteAccountOptions): Promise<DeleteOutcome> {
    return this.model.accounts.delete(subject, options);
  }
  async setThresholds(subject: string, thresholds: Threshold[] | null): Promise<void> {
    this.model.accounts.setThresholds(subject, thresholds);
  }
}

class MemoryLimits implements Face<Limits> {
  constructor(private readonly model: TollgateModel) {}
  // The hot path: a settled promise without an async frame.
  admit(subject: string, options?: AdmitOptions): Promise<Admission> {
    try {
      return Promise.resolve(this.model.limits.admit(subject, options));
    } catch (error) {
      return Promise.reject(error);
    }
  }
  /** Memory needs no deny cache: there is none to read. */
  denied(_subject: string, _options: LimitTarget & { policy: string }): Denial | undefined {
    return undefined;
  }
  async peek(subject: string, options?: LimitTarget): Promise<LimitState> {
    return this.model.limits.peek(subject, options);
  }
  async reset(subject: string, options?: LimitTarget): Promise<void> {
    this.model.limits.reset(subject, options);
  }
  async override(subject: string, options: OverrideOptions): Promise<void> {
    this.model.limits.override(subject, options);
  }
  async release(subject: string, lease: string): Promise<boolean> {
    return this.model.limits.release(subject, lease);
  }
  async overrides(subject: string): Promise<Override[]> {
    return this.model.limits.overrides(subject);
  }
}

class MemoryCredits implements Face<Credits> {
  constructor(private readonly model: TollgateModel) {}
  async charge(subject: string, request: ChargeRequest): Promise<ChargeOutcome> {
    return this.model.credits.charge(subject, request);
  }
  async reconcile(subject: string): Promise<Reconciliation> {
    return this.model.credits.reconcile(subject);
  }
  async history(subject: string, options?: { days?: number }): Promise<DayUsage[]> {
    return this.model.credits.history(subject, options);
  }
}

class MemoryHolds implements Face<Holds> {
  constructor(private readonly model: TollgateModel) {}
  async open(subject: string, request: OpenHoldRequest): Promise<OpenOutcome> {
    return this.model.holds.open(subject, request);
  }
  async openBudget(subject: string, request: OpenBudgetRequest): Promise<OpenOutcome> {
    return this.model.holds.openBudget(subject, request);
  }
  async renew(subject: string, holdId: string): Promise<RenewOutcome> {
    return this.model.holds.renew(subject, holdId);
  }
  async settle(subject: string, holdId: string, settlement: Settlement): Promise<SettleOutcome> {
    return this.model.holds.settle(subject, holdId, settlement);
  }
  async spend(subject: string, holdId: string, spend: Spend): Promise<SettleOutcome> {
    return this.model.holds.spend(subject, holdId, spend);
  }
  async finish(subject: string, holdId: string): Promise<EndOutcome> {
    return this.model.holds.finish(subject, holdId);
  }
  async cancel(subject: string, holdId: string): Promise<EndOutcome> {
    return this.model.holds.cancel(subject, holdId);
  }
  async get(subject: string, holdId: string): Promise<Hold> {
    return this.model.holds.get(subject, holdId);
  }
  async list(subject: string, page?: { offset?: number; limit?: number }): Promise<{ total: number; active: number; holds: Hold[] }> {
    return this.model.holds.list(subject, page);
  }
  async sweep(options?: { batch?: number; maxRounds?: number }): Promise<{ subjects: number; ended: number }> {
    return this.model.holds.sweep(options);
  }
  async sweepSubject(subject: string): Promise<{ ended: number; nextLeaseAt: number | null }> {
    return this.model.holds.sweepSubject(subject);
  }
}

class MemoryKeys implements Face<Keys> {
  constructor(private readonly model: TollgateModel) {}
  async issue(subject: string, options?: IssueKeyOptions): Promise<IssuedKey> {
    return this.model.keys.issue(subject, options);
  }
  parse(key: string): { subject: string; keyId: string } | null {
    return this.model.keys.parse(key);
  }
  async revoke(subject: string, keyId: string): Promise<boolean> {
    return this.model.keys.revoke(subject, keyId);
  }
  async list(subject: string): Promise<KeyInfo[]> {
    return this.model.keys.list(subject);
  }
  verify(key: string, options: VerifyOptions & { usage: true }): Promise<UsageVerification>;
  verify(key: string, options?: VerifyOptions & { usage?: false }): Promise<Verification>;
  async verify(key: string, options?: VerifyOptions): Promise<Verification | UsageVerification> {
    return this.model.keys.verify(key, options as VerifyOptions & { usage?: false });
  }
}

/** A memory consumer looks for new events this often, as one on Redis does. */
const POLL_MS = 200;

class MemoryEvents implements Face<Events> {
  constructor(
    private readonly model: TollgateModel,
    private readonly clock: () => number,
  ) {}
  async consume(options: ConsumeOptions): Promise<void> {
    const o = consumeArgs(options);
    const events = this.model.events;
    while (!o.signal?.aborted) {
      events.join(o.group);
      for (const subject of events.subjects()) {
        if (o.signal?.aborted) break;
        const handled: string[] = [];
        for (const { entry, attempts } of events.take(o.group, subject, o.batchSize, o.retryMs)) {
          const event = { id: entry.id, type: entry.type, subject, at: entry.at, data: structuredClone(entry.data), attempt: attempts } as DeliveredEvent;
          if (attempts > o.maxAttempts) {
            const { attempt: _attempt, ...stored } = event;
            const letter: DeadLetter = { event: stored as TollgateEvent, attempts: attempts - 1, deadAt: Math.floor(this.clock()) };
            this.model.eventGroups.get(o.group)?.set(event.id, letter);
            handled.push(entry.id);
            continue;
          }
          if (o.signal?.aborted) break;
          try {
            await o.handler(event);
            handled.push(entry.id);
          } catch {
            // Not acknowledged: delivered again after retryMs.
          }
        }
        events.ack(o.group, subject, handled);
      }
      await new Promise<void>((resolve) => {
        if (o.signal?.aborted) return resolve();
        const timer = setTimeout(done, POLL_MS);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        o.signal?.addEventListener('abort', done, { once: true });
      });
    }
  }
  async deadLetters(options: { group: string }): Promise<DeadLetter[]> {
    const letters = this.model.eventGroups.get(groupName(options?.group));
    return [...(letters?.values() ?? [])]
      .map((l) => structuredClone(l) as DeadLetter)
      .sort((x, y) => x.deadAt - y.deadAt || (x.event.id < y.event.id ? -1 : 1));
  }
  async replay(group: string, id: string): Promise<boolean> {
    const letters = this.model.eventGroups.get(groupName(group));
    if (typeof id !== 'string') throw new InvalidInputError(`Not an event id: ${JSON.stringify(id)}`);
    const letter = letters?.get(id) as DeadLetter | undefined;
    if (!letter) return false;
    const outbox = this.model.outboxes.get(letter.event.subject) ?? { entries: [], seq: 0 };
    this.model.outboxes.set(letter.event.subject, outbox);
    outbox.seq += 1;
    const { event } = letter;
    outbox.entries.push({ seq: outbox.seq, id: event.id, type: event.type, at: event.at, data: event.data, group, deliveries: new Map() });
    letters!.delete(id);
    return true;
  }
  async removeGroup(group: string): Promise<void> {
    this.model.events.leave(groupName(group));
  }
  async stats(): Promise<EventStats> {
    return {
      dropped: this.model.eventsDropped,
      pendingSubjects: this.model.events.subjects().length,
      groups: [...this.model.eventGroups.entries()]
        .map(([group, letters]) => ({ group, deadLetters: letters.size }))
        .sort((x, y) => (x.group < y.group ? -1 : 1)),
    };
  }
}

class MemoryIdempotency implements Face<Idempotency> {
  constructor(private readonly model: TollgateModel) {}
  async begin(subject: string, key: string, body: unknown): Promise<BeginOutcome> {
    return this.model.idempotency.begin(subject, key, body);
  }
  async renew(subject: string, claim: IdempotencyClaim): Promise<boolean> {
    return this.model.idempotency.renew(subject, claim);
  }
  async release(subject: string, claim: IdempotencyClaim): Promise<void> {
    this.model.idempotency.release(subject, claim);
  }
}
